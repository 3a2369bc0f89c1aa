import Reactor
import TransferCore
import TransferModel

/// `max_unfinished_tasks`: creations being committed are counted here until they are in the
/// sessions' counts, so two concurrent creations cannot both pass the check on the same room.
final class TaskQuota: Sendable {
    private let inFlight = Locked(0)

    /// Reserves room for `count` new tasks, or refuses with 429 `quota_exceeded`. `unfinished` counts
    /// the principal's unfinished tasks now; the returned release must run once the creation ended.
    func reserve(_ count: Int, limit: Int, unfinished: () -> Int) throws(Refusal) -> @Sendable () -> Void {
        let granted: Bool = inFlight.withLock { pending in
            guard unfinished() + pending + count <= limit else { return false }
            pending += count
            return true
        }
        guard granted else {
            throw Refusal(.tooMany, "quota_exceeded",
                          "creating \(count) task\(count == 1 ? "" : "s") would exceed this principal's max_unfinished_tasks of \(limit)")
        }
        return { [self] in inFlight.withLock { $0 -= count } }
    }
}
