import HTTPServer
import Reactor
import TransferCore
import TransferEngine
import TransferModel

/// `GET /v1/stats`: tasks by state, transfer rates down and up, and how many transfers wait — over
/// the whole service for an admin, over its own sessions for any other principal.
struct StatsRoute {
    let coordinator: TaskCoordinator
    let rates: TransferRates

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator, rates = rates
        table.add("GET", "/v1/stats", .service) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                coordinator.taskCounts(where: { principal.sees($0) }) { counts in
                    let sessions = coordinator.registry.all.lazy.filter { principal.sees($0.identifier) }.count
                    let activity: (waiting: Int, running: Int, down: Double, up: Double)
                    if principal.isAdmin {
                        let (waiting, running) = coordinator.engine.statistics()
                        let (down, up) = rates.current
                        activity = (waiting, running, down, up)
                    } else {
                        activity = coordinator.activity(where: principal.sees)
                    }
                    let (waiting, running, down, up) = activity
                    responder.respond(RouteSupport.json { json in
                        json.beginObject()
                        json.key("sessions"); json.int(sessions)
                        json.key("tasks"); json.beginObject()
                        for state in TaskState.allCases { json.key(escaping: state.rawValue); json.int(counts[state] ?? 0) }
                        json.endObject()
                        json.key("bytes_per_second"); json.beginObject()
                        json.key("down"); json.double(down.rounded())
                        json.key("up"); json.double(up.rounded())
                        json.endObject()
                        json.key("queue_depth"); json.int(waiting)
                        json.key("transfers_running"); json.int(running)
                        json.endObject()
                    })
                }
            }
        }
    }
}

/// Samples the engine's byte counters once a second and keeps the rates of the last interval.
package final class TransferRates: Sendable {
    private let sample = Locked<(at: UInt64, received: Int64, sent: Int64, down: Double, up: Double)>((0, 0, 0, 0, 0))

    package init(engine: TransferEngine, clock: EventLoop) {
        let sample = sample
        @Sendable func tick() {
            let now = MonotonicClock.now()
            let (received, sent) = engine.totalBytes
            sample.withLock { s in
                if s.at > 0 {
                    let dt = Double(now - s.at) / 1e9
                    s.down = Double(received - s.received) / dt
                    s.up = Double(sent - s.sent) / dt
                }
                s = (now, received, sent, s.down, s.up)
            }
            clock.scheduleTimer(at: now + 1_000_000_000) { tick() }
        }
        clock.execute { tick() }
    }

    var current: (down: Double, up: Double) { sample.withLock { ($0.down, $0.up) } }
}
