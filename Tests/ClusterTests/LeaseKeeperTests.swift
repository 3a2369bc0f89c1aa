import Cluster
import TransferEngine
import XCTest

final class LeaseKeeperTests: XCTestCase {
    func testARenewalReleasesWhatItNoLongerHolds() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        XCTAssertEqual(keeper.handle(.renewed(sentAt: 100, before: ["a", "b", "c"], held: ["a", "c"], after: ["a", "c"])), [.release(["b"])])
        XCTAssertEqual(keeper.actsUntil, 112)
    }

    func testSessionsCreatedAfterTheRenewalWasSentAreNotJudgedByIt() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        // "new" came into memory after the renewal was sent: its lease is not in `held` yet.
        XCTAssertEqual(keeper.handle(.renewed(sentAt: 100, before: ["a"], held: ["a"], after: ["a", "new"])), [])
    }

    func testFailuresWithinTheDeadlineKeepEverything() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        _ = keeper.handle(.renewed(sentAt: 100, before: [], held: [], after: []))
        XCTAssertEqual(keeper.handle(.checked(at: 111.9, holding: ["a"])), [])
    }

    func testPastTheDeadlineEverythingIsReleasedBeforeAnotherReplicaMayClaimIt() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        _ = keeper.handle(.renewed(sentAt: 100, before: [], held: [], after: []))
        XCTAssertEqual(keeper.handle(.checked(at: 112, holding: ["b", "a"])), [.release(["a", "b"])])
        XCTAssertFalse(keeper.mayAct(at: 112))
    }

    func testNothingIsHeldBeforeTheFirstRenewal() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        XCTAssertFalse(keeper.mayAct(at: 0))
        XCTAssertEqual(keeper.handle(.checked(at: 0, holding: ["a"])), [.release(["a"])])
        XCTAssertEqual(keeper.handle(.checked(at: 0, holding: [])), [])
    }

    func testAnOlderRenewalAnsweredLateNeverShortensTheDeadline() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        _ = keeper.handle(.renewed(sentAt: 110, before: [], held: [], after: []))
        _ = keeper.handle(.renewed(sentAt: 100, before: [], held: [], after: []))
        XCTAssertEqual(keeper.actsUntil, 122)
    }

    /// Leases the store kept for this replica while it let the sessions go (a renewal that ran
    /// past the deadline) are taken back — after two renewals, not one: a session being created
    /// is leased a moment before it is in memory.
    func testLeasesHeldButNotInMemoryAreTakenBackOnTheSecondRenewal() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        XCTAssertEqual(keeper.handle(.renewed(sentAt: 100, before: [], held: ["a", "b"], after: [])), [])
        XCTAssertEqual(keeper.handle(.renewed(sentAt: 101, before: [], held: ["a", "b", "c"], after: ["b"])), [.adopt(["a"])])
        XCTAssertEqual(keeper.handle(.renewed(sentAt: 102, before: ["a", "b"], held: ["a", "b", "c"], after: ["a", "b", "c"])), [])
    }

    func testClaimedSessionsAreAdopted() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        XCTAssertEqual(keeper.handle(.claimed(["x"])), [.adopt(["x"])])
        XCTAssertEqual(keeper.handle(.claimed([])), [])
    }
}

/// The write fence ends where the keeper stops acting: a renewal sent at 100 s (however late its
/// answer) keeps the store's lease until at least 115 s, when another replica may claim it;
/// writes stop at 112 s.
final class LeaseKeeperFenceTests: XCTestCase {
    func testTheFenceEndsAMarginBeforeTheStoresExpiryCountedFromWhenTheRenewalWasSent() {
        var keeper = LeaseKeeper(ttl: 15, margin: 3)
        _ = keeper.handle(.renewed(sentAt: 100, before: [], held: [], after: []))
        let fence = WriteFence()
        fence.allow(until: keeper.actsUntil!)
        XCTAssertTrue(fence.permits(at: 111_900_000_000))
        XCTAssertFalse(fence.permits(at: 112_000_000_000))
        XCTAssertFalse(keeper.mayAct(at: 112))
    }
}
