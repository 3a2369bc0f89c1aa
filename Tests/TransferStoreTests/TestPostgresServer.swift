import Foundation
import Glibc
import TestSupport

/// A PostgreSQL server of a test's own (scripts/postgres.sh in a temporary directory, on a free
/// port), for tests that stop and start it under a live store — which the shared server of
/// `TestPostgres` must not be, as other tests use it meanwhile.
final class TestPostgresServer {
    let url: String
    private let directory: String
    private let port: Int

    init() throws {
        guard let port = freeLoopbackPort() else { throw ServerError.failed("no free port") }
        self.port = port
        directory = NSTemporaryDirectory() + "transferd-pg-\(UUID().uuidString)"
        url = "postgres://postgres@127.0.0.1:\(port)/postgres"
        try start()
    }

    deinit {
        try? stop()
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: directory + ".initdb.log")
    }

    func start() throws { try run("start", directory, String(port)) }

    /// A fast shutdown: the server cuts its connections, as when it crashes or fails over.
    func stop() throws { try run("stop", directory) }

    enum ServerError: Error { case failed(String) }

    /// By `posix_spawn` and `waitpid`: Foundation's `Process` waits for descriptors it shares with
    /// the child, which the server started in the background keeps open.
    private func run(_ arguments: String...) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/postgres.sh").path
        let argv = ([script] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        guard posix_spawn(&pid, script, nil, nil, argv, environ) == 0 else { throw ServerError.failed("cannot run \(script)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { throw ServerError.failed("postgres.sh \(arguments.joined(separator: " ")) exited with \(status)") }
    }
}
