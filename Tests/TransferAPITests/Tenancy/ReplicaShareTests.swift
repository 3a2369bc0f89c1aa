import Testing
@testable import TransferAPI

/// A replica's share of a principal's rate, on a clock of our own.
struct ReplicaShareTests {
    static let second: UInt64 = 1_000_000_000

    @Test func outsideAClusterTheShareIsWhole() {
        #expect(ReplicaShare().fraction(now: 0) == 1)
    }

    @Test func aJoiningReplicaGrantsNothingUntilTheOthersCountedIt() {
        let share = ReplicaShare()
        share.enterCluster()
        #expect(share.fraction(now: 5 * Self.second) == 0, "before its first heartbeat it does not know how many share")
        share.set(replicas: 2, settle: 2, now: 10 * Self.second)
        #expect(share.fraction(now: 11 * Self.second) == 0, "the other replica may still count itself alone")
        #expect(share.fraction(now: 12 * Self.second) == 0.5)
        // Later counts change the share at once, and do not start the wait again.
        share.set(replicas: 3, settle: 2, now: 20 * Self.second)
        #expect(share.fraction(now: 20 * Self.second) == 1.0 / 3)
    }

    @Test func noShareRefusesAndLeavesTheBucketFull() {
        var bucket = RequestBucket(rate: 1, burst: 4, now: 0)
        let refused = bucket.take(now: 0, share: 0)
        #expect(!refused.allowed && refused.retryAfter == 1)
        let granted = (0..<3).map { _ in bucket.take(now: 0, share: 0.5) }
        #expect(granted.map(\.allowed) == [true, true, false], "half of a burst of four, untouched by the refusal")
    }
}
