import Reactor
import TransferModel

/// Deletes what the retention period (`--retention`) has run out on, every `interval` seconds:
/// completed tasks (with their bodies and the files transferd keeps for them), events, client
/// blobs that no unfinished task needs, and sessions invalidated longer ago than the period.
package final class RetentionSweeper: Sendable {
    private let journal: TaskJournal
    private let control: TaskControl
    private let retirement: SessionRetirement
    private let files: TaskFiles
    private let clock: any ServiceClock
    private let retention: Double
    private let interval: Double

    package init(coordinator: TaskCoordinator, retention: Double, interval: Double) {
        journal = coordinator.journal
        control = coordinator.control
        retirement = coordinator.retirement
        files = coordinator.files
        clock = coordinator.time
        self.retention = retention
        self.interval = interval
    }

    /// Sweeps every `interval` (on the file-work queue, as sweeping reads the stores), the next
    /// pass timed from the end of the last.
    package func start() {
        clock.schedule(after: interval, on: files.fileWork) { [self] in
            sweep()
            start()
        }
    }

    /// Completed tasks past the period, as the stores find them.
    private func sweepTasks(before cutoff: Timestamp) {
        for store in journal.stores {
            for record in (try? store.completedBefore(cutoff, limit: 1000)) ?? [] {
                guard let session = journal.registry.session(record.session) else { continue }
                control.forget(session, record.id) { _ in }
            }
        }
    }

    /// One pass (on the file-work queue): bounded, so a backlog is worked off over several passes.
    func sweep() {
        let cutoff = clock.now().adding(seconds: -retention)
        sweepTasks(before: cutoff)
        for store in journal.stores {
            store.commit([.deleteEventsOlder(than: cutoff, limit: 10_000)]) { _ in }
        }
        for session in journal.registry.all where session.locked({ session.invalidatedAt.map { $0 < cutoff } ?? false }) {
            retirement.remove(session) {}
        }
        guard let blobs = files.blobs else { return }
        guard let expired = try? blobs.expired(before: cutoff, limit: 1000) else { return }
        for id in expired where files.unfinishedTask(using: id) == nil {
            blobs.delete(id) { _ in }
        }
    }
}
