import Reactor

/// A principal's request budget: a token bucket of `burst` requests, refilled at `rate` a second,
/// one token per request. Pure arithmetic on a clock reading, so it is tested without waiting.
struct RequestBucket: Sendable {
    let rate: Double
    let burst: Int
    private var tokens: Double
    private var last: UInt64

    init(rate: Double, burst: Int, now: UInt64) {
        self.rate = rate
        self.burst = burst
        tokens = Double(burst)
        last = now
    }

    /// The answer to one request, and what the `RateLimit` header field says after it.
    struct Decision: Sendable, Equatable {
        let allowed: Bool
        /// Whole requests left now.
        let remaining: Int
        /// Whole seconds until the bucket is full again.
        let secondsUntilFull: Int
        /// Whole seconds until one request is allowed again (≥ 1; meaningful when refused).
        let retryAfter: Int
    }

    /// `share`: the fraction of the rate and burst this replica grants (`ReplicaShare`); none
    /// refuses every request, leaving the bucket as it is.
    mutating func take(now: UInt64, share: Double = 1) -> Decision {
        guard share > 0 else {
            return Decision(allowed: false, remaining: 0, secondsUntilFull: Int((Double(burst) / rate).rounded(.up)), retryAfter: 1)
        }
        let rate = rate * share, burst = max(1, Double(burst) * share)
        if now > last {
            tokens = min(burst, tokens + rate * Double(now - last) / 1e9)
            last = now
        }
        tokens = min(tokens, burst)
        let allowed = tokens >= 1
        if allowed { tokens -= 1 }
        return Decision(allowed: allowed, remaining: Int(tokens.rounded(.down)),
                        secondsUntilFull: Int(((burst - tokens) / rate).rounded(.up)),
                        retryAfter: max(1, Int(((1 - tokens) / rate).rounded(.up))))
    }

    /// The policy in the IETF ratelimit-headers draft's structured-field form: `q` requests per
    /// window of `w` seconds, the time an empty bucket takes to fill.
    var policyField: String {
        "\"requests\";q=\(burst);w=\(max(1, Int((Double(burst) / rate).rounded(.up))))"
    }

    static func stateField(_ d: Decision) -> String { "\"requests\";r=\(d.remaining);t=\(d.secondsUntilFull)" }
}

/// A principal's bucket, shared by the HTTP loops.
final class RequestRateLimiter: Sendable {
    private let bucket: Locked<RequestBucket>
    let policyField: String
    let rate: Double
    let burst: Int
    private let share: ReplicaShare

    init(rate: Double, burst: Int, share: ReplicaShare) {
        let bucket = RequestBucket(rate: rate, burst: burst, now: MonotonicClock.now())
        self.bucket = Locked(bucket)
        policyField = bucket.policyField
        self.rate = rate
        self.burst = burst
        self.share = share
    }

    func take() -> RequestBucket.Decision {
        let now = MonotonicClock.now(), fraction = share.fraction(now: now)
        return bucket.withLock { $0.take(now: now, share: fraction) }
    }
}

extension Double {
    /// `5` rather than `5.0`, for messages.
    var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self) }
}
