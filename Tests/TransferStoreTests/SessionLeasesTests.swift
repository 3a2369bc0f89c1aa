import Dispatch
import Postgres
import Reactor
import XCTest
@testable import PostgresStore
@testable import TransferModel
@testable import TransferStore

/// Cluster mode's leases and fencing on a real PostgreSQL: replicas are stores with different
/// owners on one schema. An expired lease is made with a negative time to live, so no test waits
/// for a clock.
final class SessionLeasesTests: PostgresTestCase {
    /// Runs `body` with an unfenced store (to set sessions up) and the URL of their schema.
    private func withSessions(_ ids: [String], _ body: (PostgresTransferStore, String) throws -> Void) throws {
        try TestPostgres.withSchema { url in
            let setup = try PostgresTransferStore(url: url)
            defer { setup.close() }
            try setup.apply(ids.map { .upsertSession(F.session($0)) })
            try body(setup, url)
        }
    }

    func testClaimsTakeFreeAndExpiredSessionsOnly() throws {
        try withSessions(["s1", "s2", "s3", "s4"]) { store, _ in
            let first = try store.claimSessions(owner: "a", ttlSeconds: 60, limit: 3)
            XCTAssertEqual(first.count, 3)
            let rest = try store.claimSessions(owner: "b", ttlSeconds: 60, limit: 10)
            XCTAssertEqual(Set(first + rest), ["s1", "s2", "s3", "s4"])
            XCTAssertEqual(try store.claimSessions(owner: "b", ttlSeconds: 60, limit: 10), [], "held leases are not claimable")

            XCTAssertEqual(try store.renewLeases(owner: "a", ttlSeconds: -1), Set(first), "renewed (into the past)")
            XCTAssertEqual(Set(try store.claimSessions(owner: "b", ttlSeconds: 60, limit: 10)), Set(first), "expired leases are")
            XCTAssertEqual(try store.renewLeases(owner: "a", ttlSeconds: 60), [], "a lost lease is not renewed")
            XCTAssertEqual(try store.renewLeases(owner: "b", ttlSeconds: 60), ["s1", "s2", "s3", "s4"])
        }
    }

    /// Replicas claiming at once never get the same session.
    func testConcurrentClaimsAreDisjoint() throws {
        let ids = (1...24).map { "s\($0)" }
        try withSessions(ids) { store, _ in
            let claimed = Locked<[[String]]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { i in
                let got = (try? store.claimSessions(owner: "r\(i)", ttlSeconds: 60, limit: 8)) ?? []
                claimed.withLock { $0.append(got) }
            }
            let all = claimed.withLock { $0 }.flatMap { $0 }
            XCTAssertEqual(all.count, Set(all).count, "a session was claimed twice: \(all.sorted())")
            XCTAssertTrue(Set(all).isSubset(of: Set(ids)))
        }
    }

    func testHolderReleaseAndHeartbeat() throws {
        try withSessions(["s1", "s2"]) { store, _ in
            XCTAssertEqual(Set(try store.claimSessions(owner: "a", ttlSeconds: 60, limit: 10)), ["s1", "s2"])
            XCTAssertNil(try store.leaseHolder(session: "s1"), "no heartbeat yet: no address to forward to")
            try store.heartbeat(replica: "a", address: "10.0.0.1:8080", ttlSeconds: 30)
            XCTAssertEqual(try store.leaseHolder(session: "s1").map { "\($0.owner) \($0.address)" }, "a 10.0.0.1:8080")
            try store.heartbeat(replica: "a", address: "10.0.0.9:8080", ttlSeconds: 30)
            XCTAssertEqual(try store.leaseHolder(session: "s1")?.address, "10.0.0.9:8080")

            try store.releaseLeases(owner: "b", sessions: ["s1"])  // not b's: nothing happens
            XCTAssertEqual(try store.leaseHolder(session: "s1")?.owner, "a")
            try store.releaseLeases(owner: "a", sessions: ["s1"])
            XCTAssertNil(try store.leaseHolder(session: "s1"))
            XCTAssertEqual(try store.claimSessions(owner: "b", ttlSeconds: 60, limit: 10), ["s1"])
        }
    }

    /// A request for a session whose holder died claims that one session on the spot.
    func testClaimingOneSession() throws {
        try withSessions(["s1", "s2"]) { store, _ in
            XCTAssertTrue(try store.claimSession("s1", owner: "a", ttlSeconds: 60))
            XCTAssertTrue(try store.claimSession("s1", owner: "a", ttlSeconds: 60), "its own lease, renewed")
            XCTAssertFalse(try store.claimSession("s1", owner: "b", ttlSeconds: 60), "held by a")
            XCTAssertFalse(try store.claimSession("nope", owner: "b", ttlSeconds: 60), "no such session")
            _ = try store.renewLeases(owner: "a", ttlSeconds: -1)
            XCTAssertTrue(try store.claimSession("s1", owner: "b", ttlSeconds: 60), "expired")
        }
    }

    /// Heartbeats count the replicas alive; a removed session's lease is no longer renewed.
    func testHeartbeatsCountReplicasAndRemovedSessionsLoseTheirLeases() throws {
        try withSessions(["s1", "s2"]) { store, _ in
            XCTAssertEqual(try store.heartbeat(replica: "a", address: "10.0.0.1:8080", ttlSeconds: 30), 1)
            XCTAssertEqual(try store.heartbeat(replica: "b", address: "10.0.0.2:8080", ttlSeconds: 30), 2)
            XCTAssertEqual(Set(try store.claimSessions(owner: "a", ttlSeconds: 60, limit: 10)), ["s1", "s2"])
            try store.apply([.deleteSession("s2")])
            XCTAssertEqual(try store.renewLeases(owner: "a", ttlSeconds: 60), ["s1"])
        }
    }

    /// A replica writes only for sessions it holds; a refused batch stores nothing, and the
    /// batches beside it in the same group commit.
    func testBatchesAreFencedByLeases() throws {
        try withSessions(["mine", "theirs"]) { store, url in
            XCTAssertEqual(try store.claimSessions(owner: "a", ttlSeconds: 60, limit: 1).count, 1)
            let first = try XCTUnwrap(try store.leaseHolderOwner(of: ["mine", "theirs"], owner: "a"))
            let other = first == "mine" ? "theirs" : "mine"
            XCTAssertEqual(try store.claimSessions(owner: "b", ttlSeconds: 60, limit: 1), [other])
            let a = try PostgresTransferStore(url: url, owner: "a")
            defer { a.close() }

            let results = a.applyAll([
                [F.insert(F.task("t1", sequence: 1, session: first))],
                [F.insert(F.task("t2", sequence: 2, session: first)), F.insert(F.task("t3", sequence: 1, session: other))],
                [.insertEvents([F.event(1, session: other)])],
            ])
            XCTAssertNoThrow(try results[0].get())
            for refused in results[1...] {
                XCTAssertThrowsError(try refused.get()) { error in
                    guard case StoreError.fenced(let session) = error else { return XCTFail("\(error)") }
                    XCTAssertEqual(session, other)
                }
            }
            XCTAssertEqual(try a.listTasks(session: first, after: 0, state: nil, kind: nil, limit: 10).map(\.id), ["t1"])
            XCTAssertEqual(try a.listTasks(session: other, after: 0, state: nil, kind: nil, limit: 10).count, 0)
            XCTAssertEqual(try a.events(session: other, after: 0, limit: 10).count, 0)

            // Its lease lapses: a stalled replica's late completion is refused.
            _ = try store.renewLeases(owner: "a", ttlSeconds: -1)
            var done = F.task("t1", sequence: 1, state: .completed, session: first)
            done.completedAt = Timestamp(milliseconds: F.start + 5)
            XCTAssertThrowsError(try a.apply([F.update(done)]))
            XCTAssertEqual(try a.loadTask(session: first, id: "t1")?.state, .suspended)
        }
    }

    /// A new session belongs to the replica whose batch creates it; another replica cannot write
    /// for it, not even by re-attaching it.
    func testCreatingASessionTakesItsLease() throws {
        try TestPostgres.withSchema { url in
            let a = try PostgresTransferStore(url: url, owner: "a")
            defer { a.close() }
            let b = try PostgresTransferStore(url: url, owner: "b")
            defer { b.close() }
            try a.apply([.upsertSession(F.session("new")), F.insert(F.task("t1", sequence: 1, session: "new"))])
            XCTAssertThrowsError(try b.apply([.upsertSession(F.session("new"))])) { error in
                guard case StoreError.fenced(session: "new") = error else { return XCTFail("\(error)") }
            }
            XCTAssertEqual(try a.renewLeases(owner: "a", ttlSeconds: 60), ["new"])
            try a.apply([.setAcked(session: "new", through: 1)])
        }
    }
}

extension PostgresTransferStore {
    /// Which of `sessions` `owner` holds (renewing them for a minute), for a test that must know.
    fileprivate func leaseHolderOwner(of sessions: [String], owner: String) throws -> String? {
        try renewLeases(owner: owner, ttlSeconds: 60).first { sessions.contains($0) }
    }
}
