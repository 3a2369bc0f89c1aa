import ArgumentParser
import Foundation
import OpenAPIRuntime
import TransferdClient

/// `--wait` / `--no-wait`, and what waiting prints: shared by download, upload and wait.
struct WaitOptions: ParsableArguments {
    @Flag(inversion: .prefixedNo, help: "Show live progress and exit when the task completes (default when stderr is a terminal).")
    var wait: Bool?

    var waiting: Bool { wait ?? Terminal.isTerminal(STDERR_FILENO) }

    func finish(_ ids: [String], api: API, session: String, after: Int?,
                result: (Components.Schemas.Task) -> String) async throws {
        try await Self.finish(ids, api: api, session: session, after: after, result: result)
    }

    /// Waits with progress on stderr, prints each task's result on stdout, and fails (exit 1) when
    /// one of them failed.
    static func finish(_ ids: [String], api: API, session: String, after: Int?,
                       result: (Components.Schemas.Task) -> String) async throws {
        let tasks = try await Waiter(api: api, session: session, board: ProgressBoard(), after: after).wait(for: ids)
        for task in tasks {
            if api.output.json { api.output.jsonLines(.latest("getTask", id: task.id)) } else if Waiter.failure(of: task) == nil { print(result(task)) }
        }
        let failures = tasks.compactMap(Waiter.failure(of:))
        if !failures.isEmpty { throw Failure.taskFailed(failures.joined(separator: "\n")) }
    }
}

struct Download: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a URL to a file on transferd's machine.",
        discussion: """
        The destination is named as `curl -o` names it: a relative path resolves against the current \
        directory, and without -o the file takes its name from the URL, in the current directory. It \
        must fall beneath one of transferd's --allow-path roots.

        Examples:
          transferctl download https://example.com/big.iso                # ./big.iso, with progress
          transferctl download https://example.com/a.tar -o /srv/in/a.tar --no-wait
          transferctl download https://example.com/a.tar --session com.example.sync --json
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var waiting: WaitOptions
    @Argument(help: "The URL to fetch.") var url: String
    @Option(name: .shortAndLong, help: "Where to write the file (as curl -o).") var output: String?

    func run() async throws {
        let api = try global.api()
        let destination = try Self.destination(url: url, output: output)
        let session = try await api.session()
        let cursor = try await Waiter.cursor(api, session: session)
        let creation = Components.Schemas.TaskCreation(
            kind: .download, request: .init(url: url), download: .init(destination: destination))
        let task = try await api.client.createTask(path: .init(identifier: session), body: .json(creation)).created.body.json
        guard waiting.waiting else { return api.output.created(task) }
        try await waiting.finish([task.id], api: api, session: session, after: cursor) { $0.result?.location ?? destination }
    }

    /// The absolute destination path, as `curl -o PATH` (or `curl -O`) would name it.
    static func destination(url: String, output: String?) throws -> String {
        let current = FileManager.default.currentDirectoryPath
        // `..` is resolved here, as the shell would: transferd refuses paths that contain it.
        if let output {
            let url = output.hasPrefix("/") ? URL(fileURLWithPath: output) : URL(fileURLWithPath: current).appendingPathComponent(output)
            return url.standardized.path
        }
        guard let name = URL(string: url)?.lastPathComponent, !name.isEmpty, name != "/" else {
            throw Failure.usage("the URL names no file; give the destination with -o PATH")
        }
        return URL(fileURLWithPath: current).appendingPathComponent(name).path
    }
}

struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload a local file to a URL.",
        discussion: """
        The file is handed to transferd as a blob first, then sent by an upload task.

        Examples:
          transferctl upload report.pdf https://files.example.com/report.pdf
          transferctl upload photo.jpg https://photos.example.com/api/upload --method POST
        """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var waiting: WaitOptions
    @Argument(help: "The local file to send.") var file: String
    @Argument(help: "The URL to send it to.") var url: String
    @Option(help: "The HTTP method.") var method = "PUT"

    func run() async throws {
        let api = try global.api()
        let session = try await api.session()
        let cursor = try await Waiter.cursor(api, session: session)
        let blob = try await Blobs.put(file, api: api)
        let creation = Components.Schemas.TaskCreation(
            kind: .upload, request: .init(url: url, method: method), upload: .UploadFromBlob(.init(fromBlob: blob.id)))
        let task = try await api.client.createTask(path: .init(identifier: session), body: .json(creation)).created.body.json
        guard waiting.waiting else { return api.output.created(task) }
        try await waiting.finish([task.id], api: api, session: session, after: cursor) { task in
            "\(task.id) \(task.response.map { String($0.status) } ?? "-")"
        }
    }
}

struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait for tasks to complete, with live progress.",
        discussion: """
        Re-attaches to tasks started earlier (after Ctrl-C, say). Exits 1 when one of them failed.

        Examples:
          transferctl wait t_01 t_02
          transferctl wait t_01 --session com.example.sync --json
        """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The tasks to wait for.") var tasks: [String]

    func validate() throws {
        if tasks.isEmpty { throw ValidationError("name at least one task") }
    }

    func run() async throws {
        let api = try global.api()
        let session = try await api.session()
        try await WaitOptions.finish(tasks, api: api, session: session, after: nil) { task in
            "\(task.id) \(Waiter.failure(of: task) == nil ? "done" : "failed")"
        }
    }
}
