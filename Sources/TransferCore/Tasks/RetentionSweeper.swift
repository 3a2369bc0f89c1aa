import Reactor
import TransferModel

/// Deletes what the retention period (`--retention`) has run out on, every `interval` seconds:
/// completed tasks (with their bodies and the files transferd keeps for them), events, client
/// blobs that no unfinished task needs, and sessions invalidated longer ago than the period.
package final class RetentionSweeper: Sendable {
    private let coordinator: TaskCoordinator
    private let retention: Double
    private let interval: Double

    package init(coordinator: TaskCoordinator, retention: Double, interval: Double) {
        self.coordinator = coordinator
        self.retention = retention
        self.interval = interval
    }

    package func start() {
        coordinator.clock.execute { [self] in schedule() }
    }

    private func schedule() {
        coordinator.clock.scheduleTimer(at: MonotonicClock.after(seconds: interval)) { [self] in
            coordinator.fileWork.async { [self] in
                sweep()
                coordinator.clock.execute { [self] in schedule() }
            }
        }
    }

    /// Completed tasks past the period, as the stores find them.
    private func sweepTasks(before cutoff: Timestamp) {
        for store in coordinator.stores {
            for record in (try? store.completedBefore(cutoff, limit: 1000)) ?? [] {
                guard let session = coordinator.registry.session(record.session) else { continue }
                coordinator.forget(session, record.id) { _ in }
            }
        }
    }

    /// One pass (on the file-work queue): bounded, so a backlog is worked off over several passes.
    func sweep() {
        let cutoff = Timestamp.now().adding(seconds: -retention)
        sweepTasks(before: cutoff)
        for store in coordinator.stores {
            store.commit([.deleteEventsOlder(than: cutoff, limit: 10_000)]) { _ in }
        }
        for session in coordinator.registry.all where session.locked({ session.invalidatedAt.map { $0 < cutoff } ?? false }) {
            coordinator.remove(session) {}
        }
        guard let blobs = coordinator.blobs else { return }
        guard let expired = try? blobs.expired(before: cutoff, limit: 1000) else { return }
        for id in expired where coordinator.unfinishedTask(using: id) == nil {
            blobs.delete(id) { _ in }
        }
    }
}
