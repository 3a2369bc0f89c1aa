import TransferEngine
import TransferModel

/// Whether and when a failed attempt is tried again (the session's `retry`,
/// `waits_for_connectivity` and `timeout_resource_s`): transient failures — no connection, a reset, an idle timeout, a status
/// listed in `on_http_status`, a 429 with Retry-After — back off exponentially with jitter, within
/// `max_attempts` and the task's resource deadline. A session that waits for connectivity keeps
/// trying connection failures until the deadline, however many attempts that takes.
struct RetryPolicy {
    let configuration: SessionConfiguration
    let mode: SessionMode

    enum Cause {
        case failure(TransferFailure)
        case status(Int, retryAfter: Double?)
    }

    enum Decision: Equatable {
        /// Try again after this many seconds.
        case retry(after: Double)
        /// No more attempts: the cause is not transient, or `max_attempts` ran out.
        case stop
        /// The attempt would be retried, but the next one could not start before the task's
        /// resource deadline: the resource timeout, not the cause, is what ends the task.
        case deadline
    }

    func decide(after cause: Cause, attempts: Int, deadline: Timestamp, now: Timestamp = .now()) -> Decision {
        let retry = configuration.retry
        var floor: Double = 0
        switch cause {
        case .failure(let failure):
            guard failure.isTransient else { return .stop }
            let waitsForever = configuration.waitsForConnectivity(mode: mode) && failure.isConnectivity
            guard waitsForever || attempts < retry.maxAttempts else { return .stop }
        case .status(let status, let retryAfter):
            let listed = retry.onHTTPStatus.contains(status)
            guard listed || (status == 429 && retryAfter != nil), attempts < retry.maxAttempts else { return .stop }
            floor = retryAfter ?? 0
        }
        let exponential = retry.backoffInitial * pow2(attempts - 1)
        let backoff = min(retry.backoffMax, exponential) * Double.random(in: 0.75...1.25)
        let delay = max(floor, backoff)
        // No attempt that could not even start before the deadline.
        guard now.adding(seconds: delay) < deadline else { return .deadline }
        return .retry(after: delay)
    }

    private func pow2(_ n: Int) -> Double {
        n <= 0 ? 1 : Double(1 << min(n, 30))
    }
}

extension TransferFailure {
    /// Failures of reaching the host at all: what `waits_for_connectivity` waits out.
    var isConnectivity: Bool {
        code == .cannotConnectToHost || code == .cannotFindHost || code == .networkConnectionLost
    }
}
