import ArgumentParser
import Foundation
import OpenAPIRuntime
import TransferdClient

struct Blobs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hand bytes to transferd (blobs), show and delete them.",
        discussion: """
        Examples:
          transferctl blobs put report.pdf
          transferctl blobs rm b_0lq6d2k9
        """,
        subcommands: [Put.self, Get.self, Remove.self])

    static let columns: [Output.Column<Components.Schemas.Blob>] = [
        .init("BLOB") { $0.id },
        .init("SIZE") { String($0.size) },
        .init("SHA256") { $0.sha256 },
        .init("CREATED") { $0.createdAt },
    ]

    /// Hands a local file to transferd, read a MiB at a time rather than whole.
    static func put(_ path: String, api: API) async throws -> Components.Schemas.Blob {
        guard let handle = FileHandle(forReadingAtPath: path),
              let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int else {
            throw Failure.usage("cannot read \(path)")
        }
        let pieces = AsyncStream<ArraySlice<UInt8>> {
            let piece = handle.readData(ofLength: 1 << 20)
            return piece.isEmpty ? nil : ArraySlice(piece)
        }
        let body = HTTPBody(pieces, length: .known(Int64(size)), iterationBehavior: .single)
        return try await api.client.createBlob(body: .binary(body)).created.body.json
    }

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload a local file as a blob; prints its id.",
            discussion: "Examples:\n  transferctl blobs put report.pdf\n  transferctl blobs put report.pdf --json | jq -r .id")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The local file.") var file: String

        func run() async throws {
            let api = try global.api()
            let blob = try await Blobs.put(file, api: api)
            api.output.rows([blob], Blobs.columns, json: .whole("createBlob"))
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a blob's size and digest.",
            discussion: "Examples:\n  transferctl blobs get b_0lq6d2k9")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The blob.") var blob: String

        func run() async throws {
            let api = try global.api()
            api.output.object(try await api.client.getBlob(path: .init(blob: blob)).ok.body.json, Blobs.columns, json: .whole("getBlob"))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Delete a blob (refused while an unfinished task needs it).",
            discussion: "Examples:\n  transferctl blobs rm b_0lq6d2k9")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The blob.") var blob: String

        func run() async throws {
            let api = try global.api()
            _ = try await api.client.deleteBlob(path: .init(blob: blob))
            if api.output.json { try api.output.jsonLine(["id": blob, "deleted": "true"]) } else { print(blob) }
        }
    }
}

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show service-wide counts and throughput.",
        discussion: "Examples:\n  transferctl stats\n  transferctl stats --json | jq .transfers_running")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let api = try global.api()
        let stats = try await api.client.getStats().ok.body.json
        let fields: [Output.Column<Components.Schemas.Stats>] = [
            .init("sessions") { String($0.sessions) },
            .init("tasks running") { String($0.tasks.running) },
            .init("tasks suspended") { String($0.tasks.suspended) },
            .init("tasks completed") { String($0.tasks.completed) },
            .init("transfers running") { String($0.transfersRunning) },
            .init("queue depth") { String($0.queueDepth) },
            .init("download rate") { Format.bytes(Int64($0.bytesPerSecond.down)) + "/s" },
            .init("upload rate") { Format.bytes(Int64($0.bytesPerSecond.up)) + "/s" },
        ]
        api.output.object(stats, fields, json: .whole("getStats"))
    }
}

struct Whoami: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show who the token stands for: name, role, namespaces, allowed paths.",
        discussion: "Examples:\n  transferctl whoami\n  TRANSFERD_TOKEN=… transferctl whoami --json")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let api = try global.api()
        let principal = try await api.client.getWhoami().ok.body.json
        let fields: [Output.Column<Components.Schemas.Principal>] = [
            .init("name") { $0.name },
            .init("role") { $0.role.rawValue },
            .init("namespaces") { $0.namespaces?.joined(separator: ", ") ?? "any" },
            .init("allowed paths") { $0.allowPaths?.joined(separator: ", ") ?? "any" },
        ]
        api.output.object(principal, fields, json: .whole("getWhoami"))
    }
}
