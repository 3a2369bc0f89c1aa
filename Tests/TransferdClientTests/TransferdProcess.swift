import Foundation
import Glibc
import TestSupport

/// A real transferd process for the client's tests: the binary SwiftPM built beside this test
/// bundle (the test target depends on it), on a free loopback port, with a fresh data directory
/// and a bearer token; stopped with SIGTERM.
final class TransferdProcess {
    let baseURL: URL
    let token = "tdt_client_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
    private let process = Process()
    private let dataDirectory: URL

    init() throws {
        let binary = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("transferd")
        let candidates = [binary] + Self.buildDirectories().map { $0.appendingPathComponent("transferd") }
        guard let executable = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw StartError.noBinary(candidates.map(\.path))
        }
        guard let port = freeLoopbackPort() else { throw StartError.noPort }
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("transferd-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
        process.executableURL = executable
        process.arguments = ["--listen", "127.0.0.1:\(port)", "--data-dir", dataDirectory.path, "--api-token", token]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilHealthy()
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    enum StartError: Error { case noBinary([String]), notHealthy, noPort }

    /// `.build/<triple>/<configuration>` directories, for test runners whose main bundle is elsewhere.
    private static func buildDirectories() -> [URL] {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        var found: [URL] = []
        for _ in 0..<4 {
            found.append(directory)
            directory = directory.deletingLastPathComponent()
        }
        return found
    }

    private func waitUntilHealthy() throws {
        let health = baseURL.appendingPathComponent("healthz")
        for _ in 0..<200 {
            guard process.isRunning else { throw StartError.notHealthy }
            if let data = try? Data(contentsOf: health), !data.isEmpty { return }
            usleep(50_000)
        }
        throw StartError.notHealthy
    }
}
