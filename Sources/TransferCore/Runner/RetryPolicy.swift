import TransferEngine
import TransferModel
import TransferVocabulary

/// Whether and when a failed attempt is tried again (the session's `retry`,
/// `waits_for_connectivity` and `timeout_resource_s`): transient failures — no connection, a reset, an idle timeout, a status
/// listed in `on_http_status`, a 429 with Retry-After — back off exponentially with jitter, within
/// `max_attempts` and the task's resource deadline. A request the origin may have seen is tried
/// again only when `retry.methods` names its method (RFC 9110 §9.2.2); one that never left is
/// tried again whatever its method. A session that waits for connectivity keeps trying while
/// the host cannot be reached at all, past `max_attempts`, backing off all the same, until the
/// deadline. A value: the caller gives it the time and the jitter.
struct RetryPolicy {
    let configuration: SessionConfiguration
    let mode: SessionMode
    /// The task's request method.
    let method: String

    enum Cause {
        /// `requestSent`: the request went out (or began to), so the origin may have seen it
        /// (`TransferOutcome.requestSent`).
        case failure(TransferFailure, requestSent: Bool)
        /// A response came: the origin saw the request.
        case status(Int, retryAfter: Double?)
    }

    enum Decision: Equatable {
        /// Try again after this many seconds.
        case retry(after: Double)
        /// No more attempts: the cause is not transient, the method is not retried once sent, or
        /// `max_attempts` ran out.
        case stop
        /// The attempt would be retried, but the next one could not start before the task's
        /// resource deadline: the resource timeout, not the cause, is what ends the task.
        case deadline
    }

    /// The range the backoff is spread over, so that tasks failing together do not come back together.
    static let jitter: ClosedRange<Double> = 0.75...1.25

    /// `attempts`: those made so far, the failed one included. `jitter`: a factor from `jitter`.
    func decide(after cause: Cause, attempts: Int, deadline: Timestamp, now: Timestamp, jitter: Double) -> Decision {
        let retry = configuration.retry
        var floor: Double = 0
        switch cause {
        case .failure(let failure, let requestSent):
            guard failure.isTransient, !withholdsRetry(requestSent: requestSent) else { return .stop }
            let waitsForever = !requestSent && failure.isConnectivity && configuration.waitsForConnectivity(mode: mode)
            guard waitsForever || attempts < retry.maxAttempts else { return .stop }
        case .status(let status, let retryAfter):
            let listed = retry.onHTTPStatus.contains(status)
            guard listed || (status == 429 && retryAfter != nil), retry.retries(method), attempts < retry.maxAttempts else { return .stop }
            floor = retryAfter ?? 0
        }
        let exponential = retry.backoffInitial * pow2(attempts - 1)
        // The jitter spreads the wait, at the cap too, but never past the cap.
        let delay = max(floor, min(retry.backoffMax, min(retry.backoffMax, exponential) * jitter))
        // No attempt that could not even start before the deadline.
        guard now.adding(seconds: delay) < deadline else { return .deadline }
        return .retry(after: delay)
    }

    /// A request the origin may have seen is not tried again with a method the session does not list.
    func withholdsRetry(requestSent: Bool) -> Bool {
        requestSent && !configuration.retry.retries(method)
    }

    private func pow2(_ n: Int) -> Double {
        n <= 0 ? 1 : Double(1 << min(n, 30))
    }
}

extension TransferFailure {
    /// Failures of reaching the host at all — its name or a connection — what
    /// `waits_for_connectivity` waits out. A connection that was made and then lost is not one:
    /// the host is there, and such a failure counts against `max_attempts` like any other.
    var isConnectivity: Bool {
        code == .cannotConnectToHost || code == .cannotFindHost
    }
}
