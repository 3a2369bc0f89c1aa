import Testing
@testable import TransferAPI

/// The request budget's arithmetic and the header fields it shows, on a clock of our own.
struct RequestBucketTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aBurstThenOneARefill() {
        var bucket = RequestBucket(rate: 2, burst: 3, now: 10 * Self.second)
        let burst = (0..<3).map { _ in bucket.take(now: 10 * Self.second) }
        #expect(burst.allSatisfy { $0.allowed })
        #expect(burst.map(\.remaining) == [2, 1, 0])
        let refused = bucket.take(now: 10 * Self.second)
        #expect(!refused.allowed)
        #expect(refused.retryAfter == 1, "half a second to the next token, in whole seconds")
        #expect(refused.secondsUntilFull == 2, "three tokens at two a second")
        #expect(bucket.take(now: 10 * Self.second + Self.second / 2).allowed, "a token came back after half a second")
        #expect(!bucket.take(now: 10 * Self.second + Self.second / 2).allowed)
    }

    @Test func aQuietPrincipalGetsNoMoreThanItsBurst() {
        var bucket = RequestBucket(rate: 100, burst: 5, now: 0)
        let decisions = (0..<6).map { _ in bucket.take(now: 3600 * Self.second) }
        #expect(decisions.filter(\.allowed).count == 5)
    }

    @Test func aSlowRateWaitsLong() {
        var bucket = RequestBucket(rate: 0.1, burst: 1, now: 0)
        #expect(bucket.take(now: 0).allowed)
        let refused = bucket.take(now: 0)
        #expect(refused.retryAfter == 10)
        #expect(bucket.policyField == #""requests";q=1;w=10"#)
    }

    @Test func theHeaderFieldsAreStructuredFields() {
        var bucket = RequestBucket(rate: 200, burst: 400, now: 0)
        #expect(bucket.policyField == #""requests";q=400;w=2"#)
        let d = bucket.take(now: 0)
        #expect(RequestBucket.stateField(d) == #""requests";r=399;t=1"#)
    }

    @Test func aReplicaOfThreeGrantsAThirdOfTheRateAndBurst() {
        var bucket = RequestBucket(rate: 30, burst: 9, now: 0)
        let burst = (0..<4).map { _ in bucket.take(now: 0, share: 1.0 / 3) }
        #expect(burst.map(\.allowed) == [true, true, true, false], "a third of a burst of nine")
        #expect(bucket.take(now: Self.second / 10, share: 1.0 / 3).allowed, "ten a second: one back after a tenth")
        #expect(!bucket.take(now: Self.second / 10, share: 1.0 / 3).allowed)
    }
}
