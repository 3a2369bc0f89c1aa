import ArgumentParser
import Foundation
import TransferdClient

struct Events: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the session's events; with --follow, tail its event stream.",
        discussion: """
        Without --after, reading starts after what was acknowledged. --follow keeps going, live \
        progress included, reconnecting (with Last-Event-ID) when transferd restarts.

        Examples:
          transferctl events --after 0
          transferctl events --follow --json | jq -c 'select(.type == "task.completed")'
        """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "Start after this seq.") var after: Int?
    @Flag(name: .shortAndLong, help: "Keep printing events as they happen.") var follow = false

    static let columns: [Output.Column<Components.Schemas.Event>] = [
        .init("SEQ") { String($0.seq) },
        .init("AT") { $0.at },
        .init("TYPE") { $0._type },
        .init("TASK") { $0.task ?? "-" },
    ]

    func run() async throws {
        let api = try global.api()
        let session = try await api.session()
        guard follow else {
            let events = try await Pages.all { after in
                let page = try await api.client.listEvents(
                    path: .init(identifier: session), query: .init(after: after ?? self.after.map(String.init))).ok.body.json
                return (page.events, page.events.isEmpty ? nil : page.next)
            }
            return api.output.rows(events, Self.columns, json: .listed("listEvents", member: "events"))
        }
        if !api.output.json { print(Output.table(header: Self.columns.map(\.header), rows: [], bold: Terminal.fancy(STDOUT_FILENO)), terminator: "") }
        for try await element in EventStream(api: api, session: session, after: after).elements() {
            guard case .event(let event) = element else { continue }
            // Written straight to the descriptor: a pipe must see each event as it happens.
            if api.output.json {
                Terminal.write(event.data + "\n", to: STDOUT_FILENO)
            } else if let decoded = try? JSONDecoder().decode(Components.Schemas.Event.self, from: Data(event.data.utf8)) {
                Terminal.write(Output.table(header: nil, rows: [Self.columns.map { $0.value(decoded) }], bold: false), to: STDOUT_FILENO)
            }
        }
    }
}

struct Deliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the webhook delivery attempts of the session's delegate.",
        discussion: """
        Examples:
          transferctl deliveries
          transferctl deliveries --json | jq 'select(.status != 200)'
        """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let api = try global.api()
        let session = try await api.session()
        let deliveries = try await Pages.all { after in
            let page = try await api.client.listDeliveries(path: .init(identifier: session), query: .init(after: after)).ok.body.json
            return (page.deliveries, page.next)
        }
        api.output.rows(deliveries, [
            .init("EVENT") { $0.event },
            .init("SEQ") { String($0.seq) },
            .init("ATTEMPT") { String($0.attempt) },
            .init("AT") { $0.at },
            .init("STATUS") { $0.status.map(String.init) ?? "-" },
            .init("ERROR") { $0.error ?? "-" },
        ], json: .listed("listDeliveries", member: "deliveries"))
    }
}

struct Redeliver: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one event to the session's delegate again.",
        discussion: """
        Examples:
          transferctl redeliver evt_0lq6d2k9x3m1v7c4b8n5
        """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The event's id (evt_…).") var event: String

    func run() async throws {
        let api = try global.api()
        let session = try await api.session()
        _ = try await api.client.redeliverEvent(path: .init(identifier: session, event: event))
        if api.output.json { try api.output.jsonLine(["event": event, "redelivered": "true"]) } else { print(event) }
    }
}
