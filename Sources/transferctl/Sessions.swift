import ArgumentParser
import Foundation
import TransferdClient

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show, create and invalidate sessions.",
        discussion: """
        Examples:
          transferctl sessions ls
          transferctl sessions create com.example.sync --mode background
          transferctl sessions invalidate com.example.sync --cancel
        """,
        subcommands: [List.self, Get.self, Create.self, Invalidate.self])

    typealias Session = Components.Schemas.Session

    static let columns: [Output.Column<Session>] = [
        .init("SESSION") { $0.identifier },
        .init("MODE") { $0.mode.rawValue },
        .init("STATE") { $0.state.rawValue },
        .init("RUNNING") { String($0.tasks.value1.running) },
        .init("SUSPENDED") { String($0.tasks.value1.suspended) },
        .init("COMPLETED") { String($0.tasks.value1.completed) },
        .init("PENDING EVENTS") { String($0.pendingEvents) },
    ]

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls", abstract: "List the sessions this token may see.",
            discussion: """
            Examples:
              transferctl sessions ls
              transferctl sessions ls --json | jq -r .identifier
            """)
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let api = try global.api()
            let sessions = try await Pages.all { after in
                let page = try await api.client.listSessions(query: .init(after: after)).ok.body.json
                return (page.sessions, page.next)
            }
            api.output.rows(sessions, Sessions.columns, json: .listed("listSessions", member: "sessions"))
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one session (default: the current one).",
            discussion: """
            Examples:
              transferctl sessions get com.example.sync
              transferctl sessions get --json
            """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The session.") var identifier: String?

        func run() async throws {
            let api = try global.api()
            var identifier = identifier
            if identifier == nil { identifier = try await api.session() }
            let session = try await api.client.getSession(path: .init(identifier: identifier!)).ok.body.json
            api.output.object(session, Sessions.columns, json: .whole("getSession"))
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a session, or re-attach to it (keeping its configuration).",
            discussion: """
            Examples:
              transferctl sessions create com.example.sync --mode background
              transferctl sessions create com.example.scratch --mode ephemeral --json
            """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The identifier ([A-Za-z0-9._-], 1–200 characters).") var identifier: String
        @Option(help: "background, default or ephemeral.") var mode: Components.Schemas.SessionPut.ModePayload = .background

        func run() async throws {
            let api = try global.api()
            let response = try await api.client.putSession(path: .init(identifier: identifier), body: .json(.init(mode: mode)))
            let session = try (try? response.created.body.json) ?? response.ok.body.json
            api.output.object(session, Sessions.columns, json: .whole("putSession"))
        }
    }

    struct Invalidate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Invalidate a session: let its tasks finish, or cancel them with --cancel.",
            discussion: """
            Examples:
              transferctl sessions invalidate com.example.old
              transferctl sessions invalidate com.example.old --cancel
            """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The session.") var identifier: String
        @Flag(help: "Cancel running tasks (invalidateAndCancel) instead of letting them finish.") var cancel = false

        func run() async throws {
            let api = try global.api()
            let session = try await api.client.deleteSession(
                path: .init(identifier: identifier), query: .init(mode: cancel ? .cancel : .finish)).accepted.body.json
            api.output.object(session, Sessions.columns, json: .whole("deleteSession"))
        }
    }
}

extension Components.Schemas.SessionPut.ModePayload: ExpressibleByArgument {}
