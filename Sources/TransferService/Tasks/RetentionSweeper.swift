import Reactor

/// Deletes what the retention period (`--retention`) has run out on, every `interval` seconds:
/// client blobs older than the period that no unfinished task needs, and sessions invalidated
/// longer ago than the period whose events nobody acknowledged.
final class RetentionSweeper: Sendable {
    private let coordinator: TaskCoordinator
    private let retention: Double
    private let interval: Double

    init(coordinator: TaskCoordinator, retention: Double, interval: Double) {
        self.coordinator = coordinator
        self.retention = retention
        self.interval = interval
    }

    func start() {
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

    /// One pass (on the file-work queue): bounded, so a backlog is worked off over several passes.
    func sweep() {
        let cutoff = Timestamp.now().adding(seconds: -retention)
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
