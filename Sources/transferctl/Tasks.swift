import ArgumentParser
import Foundation
import TransferdClient

struct Tasks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show and control the tasks of a session.",
        discussion: """
        Examples:
          transferctl tasks ls --state running
          transferctl tasks suspend t_01
          transferctl tasks cancel t_01 --resume-data
        """,
        subcommands: [List.self, Get.self, VerbCommand<Suspend>.self, VerbCommand<Resume>.self, Cancel.self, Remove.self])

    typealias Task = Components.Schemas.Task

    static let columns: [Output.Column<Task>] = [
        .init("TASK") { $0.id },
        .init("KIND") { $0.kind.rawValue },
        .init("STATE") { $0.state.rawValue },
        .init("PROGRESS") { progress($0) },
        .init("RESULT") { outcome($0) },
        .init("URL") { $0.request.url },
    ]

    static func progress(_ task: Task) -> String {
        let p = task.progress
        let sending = p.bytesExpectedToSend > 0 && p.bytesReceived == 0
        let done = Int64(sending ? p.bytesSent : p.bytesReceived)
        let total = Int64(sending ? p.bytesExpectedToSend : p.bytesExpectedToReceive)
        let percent = total > 0 ? " (\(done * 100 / total)%)" : ""
        return Format.bytes(done) + percent
    }

    static func outcome(_ task: Task) -> String {
        guard task.state == .completed else { return "-" }
        if let error = task.error { return error.code }
        return task.response.map { String($0.status) } ?? "ok"
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls", abstract: "List the session's tasks.",
            discussion: """
            Examples:
              transferctl tasks ls
              transferctl tasks ls --state running --json | jq -r .id
            """)
        @OptionGroup var global: GlobalOptions
        @Option(help: "Only tasks in this state (suspended, running, canceling, completed).")
        var state: Components.Schemas.TaskState?

        func run() async throws {
            let api = try global.api()
            let session = try await api.session()
            let tasks = try await Pages.all { after in
                let page = try await api.client.listTasks(path: .init(identifier: session), query: .init(state: state, after: after)).ok.body.json
                return (page.tasks, page.next)
            }
            api.output.rows(tasks, Tasks.columns, json: .listed("listTasks", member: "tasks"))
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one task.",
            discussion: """
            Examples:
              transferctl tasks get t_01
              transferctl tasks get t_01 --json | jq .progress
            """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The task.") var task: String

        func run() async throws {
            let api = try global.api()
            let session = try await api.session()
            let found = try await api.client.getTask(path: .init(identifier: session, task: task)).ok.body.json
            api.output.object(found, Tasks.columns, json: .whole("getTask"))
        }
    }

    /// suspend, resume, cancel: one action on each named task, printing the task it leaves.
    struct Action {
        let global: GlobalOptions
        let tasks: [String]
        /// The API operation `perform` calls, whose replies `--json` prints.
        let operation: String
        let perform: @Sendable (API, Operations.GetTask.Input.Path) async throws -> Task

        func run() async throws {
            let api = try global.api()
            let session = try await api.session()
            var changed: [Task] = []
            for task in tasks { changed.append(try await perform(api, .init(identifier: session, task: task))) }
            api.output.rows(changed, Tasks.columns, json: .whole(operation))
        }
    }

    /// suspend and resume: the same command but for the call it makes.
    protocol Verb {
        static var name: String { get }
        static var abstract: String { get }
        static var operation: String { get }
        static func perform(_ api: API, _ path: Operations.GetTask.Input.Path) async throws -> Task
    }

    struct VerbCommand<V: Verb>: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(commandName: V.name, abstract: V.abstract,
                                 discussion: "Examples:\n  transferctl tasks \(V.name) t_01\n  transferctl tasks \(V.name) t_01 t_02 --json")
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The tasks.") var tasks: [String]

        func run() async throws {
            try await Action(global: global, tasks: tasks, operation: V.operation, perform: V.perform).run()
        }
    }

    enum Suspend: Verb {
        static let name = "suspend"
        static let operation = "suspendTask"
        static let abstract = "Suspend tasks (the partial file is kept)."
        static func perform(_ api: API, _ path: Operations.GetTask.Input.Path) async throws -> Task {
            try await api.client.suspendTask(path: .init(identifier: path.identifier, task: path.task)).ok.body.json
        }
    }

    enum Resume: Verb {
        static let name = "resume"
        static let operation = "resumeTask"
        static let abstract = "Resume suspended tasks (with Range where the origin allows)."
        static func perform(_ api: API, _ path: Operations.GetTask.Input.Path) async throws -> Task {
            try await api.client.resumeTask(path: .init(identifier: path.identifier, task: path.task)).ok.body.json
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel tasks (they complete with error \"cancelled\").",
            discussion: "Examples:\n  transferctl tasks cancel t_01\n  transferctl tasks cancel t_01 --resume-data --json | jq -r .error.resume_data")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The tasks.") var tasks: [String]
        @Flag(help: "Keep what a download fetched, as resume data in the task's error.") var resumeData = false

        func run() async throws {
            let resumeData = resumeData
            try await Action(global: global, tasks: tasks, operation: "cancelTask") { api, path in
                try await api.client.cancelTask(path: .init(identifier: path.identifier, task: path.task),
                                                body: .json(.init(produceResumeData: resumeData))).ok.body.json
            }.run()
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Forget tasks (cancelled first if needed) and the files transferd kept.",
            discussion: "Examples:\n  transferctl tasks rm t_01 t_02")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The tasks.") var tasks: [String]

        func run() async throws {
            let api = try global.api()
            let session = try await api.session()
            for task in tasks {
                _ = try await api.client.deleteTask(path: .init(identifier: session, task: task))
                if api.output.json { try api.output.jsonLine(["id": task, "deleted": "true"]) } else { print(task) }
            }
        }
    }
}

extension Components.Schemas.TaskState: ExpressibleByArgument {}
