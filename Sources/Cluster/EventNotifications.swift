import CLinux
import Dispatch
import Logging
import Postgres
import PostgresStore
import Reactor
import TransferCore

/// Cluster mode: wakes this replica's readers of sessions other replicas hold, and drops its copies
/// of their completed tasks that changed. A connection of its own `LISTEN`s, on a loop of its own,
/// on the channel every commit that journals events notifies (`session:seq`) — each notification
/// has the coordinator publish what the session's journal gained — and on the one of changes to
/// stored tasks (`session/task`). Every second the views are looked at anyway, which stands in for notifications while
/// the connection is down (it is made again on the same tick) or one was missed.
package final class EventNotifications: EventHandler, @unchecked Sendable {
    private let url: String
    private let coordinator: TaskCoordinator
    private let logger: Logger
    private let loop = EventLoop(name: "notifications")
    /// Reading the journal blocks: it happens here, never on the loop.
    private let reads = DispatchQueue(label: "transferd.notifications")
    // Loop-confined.
    private var connection: PostgresConnection?
    private var stopped = false

    static let pollInterval = 1.0

    package init(url: String, coordinator: TaskCoordinator, logger: Logger) {
        self.url = url
        self.coordinator = coordinator
        self.logger = logger
    }

    package func start() {
        loop.start()
        loop.execute { [self] in
            connect()
            tick()
        }
    }

    package func stop() {
        loop.execute { [self] in
            stopped = true
            disconnect()
        }
        loop.stopAndJoin()
    }

    override package func handleEvents(_ events: UInt32) {
        guard let connection else { return }
        do {
            let notifications = try connection.drainNotifications()
            for changed in notifications where changed.channel == PostgresTransferStore.tasksChannel {
                coordinator.tasksChanged(changed.payload)
            }
            let sessions = Set(notifications
                .filter { $0.channel == PostgresTransferStore.eventsChannel }
                .compactMap { $0.payload.split(separator: ":", maxSplits: 1).first.map(String.init) })
            guard !sessions.isEmpty else { return }
            reads.async { [coordinator] in
                for session in sessions { coordinator.eventsCommitted(session) }
            }
        } catch {
            logger.warning("event notifications lost their connection; polling until it is back", metadata: ["error": "\(error)"])
            disconnect()
        }
    }

    private func connect() {
        guard connection == nil, !stopped else { return }
        do {
            let made = try PostgresConnection(url: url)
            try made.listen(PostgresTransferStore.eventsChannel)
            try made.listen(PostgresTransferStore.tasksChannel)
            connection = made
            loop.register(made.socketDescriptor, events: UInt32(EPOLLIN.rawValue), handler: self)
            coordinator.trustCopies(true)
        } catch {
            connection = nil
        }
    }

    private func disconnect() {
        guard let connection else { return }
        coordinator.trustCopies(false)
        loop.deregister(connection.socketDescriptor)
        self.connection = nil
    }

    private func tick() {
        _ = loop.scheduleTimer(at: MonotonicClock.after(seconds: EventNotifications.pollInterval)) { [self] in
            guard !stopped else { return }
            connect()
            reads.async { [coordinator] in coordinator.eventsCommitted(nil) }
            tick()
        }
    }
}
