import Glibc
import Reactor
import Synchronization
import TestSupport
import Testing
@testable import TransferEngine

/// Names groups per session as a test sets them, and records who asked.
final class TestGroupResolver: BandwidthGroupResolver {
    private let members: Locked<[String: [BandwidthGroup]]>
    private let counter = Atomic<UInt64>(0)
    /// The sessions asked about, in order.
    let asked = Locked<[String]>([])

    init(_ members: [String: [BandwidthGroup]]) { self.members = Locked(members) }

    var generation: UInt64 { counter.load(ordering: .relaxed) }

    func groups(forSession identifier: String) -> [BandwidthGroup] {
        asked.withLock { $0.append(identifier) }
        return members.withLock { $0[identifier] ?? [] }
    }

    /// New answers, under a new generation.
    func set(_ session: String, _ groups: [BandwidthGroup]) {
        members.withLock { $0[session] = groups }
        counter.add(1, ordering: .relaxed)
    }
}

/// Lower bounds on elapsed time only: a rate is a ceiling, and how far under it a busy machine
/// stays is no fault. Rates are low against a loopback origin, so without the group each transfer
/// would take milliseconds.
@Suite(.serialized)
struct BandwidthGroupTests {
    /// What a group may let through beyond its rate: a full bucket (a fifth of a second, at least
    /// 16 KiB) and one piece (a twentieth of a second) per transfer that found room at once.
    static func allowance(rate: Int64, transfers: Int) -> Int64 {
        max(rate / 5, 16 * 1024) + Int64(transfers) * max(rate / 20, 1024)
    }

    static func seconds(since start: UInt64) -> Double { Double(MonotonicClock.now() - start) / 1e9 }

    static func makeEngine(_ resolver: TestGroupResolver) -> TransferEngine {
        TransferEngine.globalInit()
        return TransferEngine(loopCount: 2, policy: NetworkPolicy(parsing: "default")!, bandwidthGroups: resolver)
    }

    /// A download in one session and an upload in another (on the other loop: "grouped-a" and
    /// "grouped-b" hash to different ones) share the group's rate: together, not each.
    @Test func twoSessionsInAGroupShareItsRate() throws {
        let origin = try TestOrigin()
        let rate: Int64 = 100_000
        let group = BandwidthGroup(name: "tenant", bytesPerSecond: rate)
        let engine = Self.makeEngine(TestGroupResolver(["grouped-a": [group], "grouped-b": [group]]))
        let size = 100_000
        let download = RecordingObserver(), upload = RecordingObserver()
        var put = TransferSpec(label: "u", session: "grouped-b", url: origin.url("/upload"))
        put.method = "PUT"
        put.body = .segments([.bytes(TestOrigin.content(size))])
        put.output = .memory
        let start = MonotonicClock.now()
        engine.submit(TransferSpec(label: "d", session: "grouped-a", url: origin.url("/bytes/\(size)")), observer: download)
        engine.submit(put, observer: upload)
        let received = try #require(download.wait(seconds: 30))
        let sent = try #require(upload.wait(seconds: 30))
        let elapsed = Self.seconds(since: start)
        #expect(received.failure == nil && received.bytesReceived == Int64(size))
        #expect(sent.failure == nil && sent.bytesSent == Int64(size))
        #expect(String(decoding: sent.body ?? [], as: UTF8.self).hasPrefix("PUT \(size) "))
        let floor = Double(2 * Int64(size) - Self.allowance(rate: rate, transfers: 2)) / Double(rate)
        #expect(elapsed >= floor, "\(2 * size) bytes in \(elapsed) s against \(rate) B/s")
        engine.shutdown()
        origin.server.shutdown()
    }

    /// While a grouped transfer crawls (ten seconds' worth), a session outside the group moves
    /// twenty times as much and is done first. The crawling one, paused most of the time, then
    /// stops like any other.
    @Test func aSessionOutsideTheGroupIsNotSlowed() throws {
        let origin = try TestOrigin()
        let group = BandwidthGroup(name: "tenant", bytesPerSecond: 20_000)
        let resolver = TestGroupResolver(["grouped-a": [group]])
        let engine = Self.makeEngine(resolver)
        let slow = RecordingObserver(), fast = RecordingObserver()
        let crawling = engine.submit(TransferSpec(label: "slow", session: "grouped-a", url: origin.url("/bytes/200000")),
                                     observer: slow)
        engine.submit(TransferSpec(label: "fast", session: "outside", url: origin.url("/bytes/4000000")), observer: fast)
        let outcome = try #require(fast.wait(seconds: 30))
        #expect(outcome.failure == nil && outcome.bytesReceived == 4_000_000)
        #expect(slow.outcome.withLock { $0 } == nil)
        crawling.stop(.cancelled)
        #expect(slow.wait(seconds: 10)?.stopReason == .cancelled)
        #expect(resolver.asked.withLock { $0 }.sorted() == ["grouped-a", "outside"])
        engine.shutdown()
        origin.server.shutdown()
    }

    /// A transfer paused at a crawl speeds up when its group's rate is raised in place: at the
    /// first rate it would need 50 seconds.
    @Test func setRateChangesTheRateOfRunningTransfers() throws {
        let origin = try TestOrigin()
        let group = BandwidthGroup(name: "tenant", bytesPerSecond: 20_000)
        let engine = Self.makeEngine(TestGroupResolver(["rated": [group]]))
        let observer = RecordingObserver()
        let handle = engine.submit(TransferSpec(label: "t", session: "rated", url: origin.url("/bytes/1000000")), observer: observer)
        while handle.bytesReceived == 0 && observer.outcome.withLock({ $0 }) == nil { usleep(10_000) }
        group.setRate(100_000_000)
        #expect(group.bytesPerSecond == 100_000_000)
        let outcome = try #require(observer.wait(seconds: 20))
        #expect(outcome.failure == nil && outcome.bytesReceived == 1_000_000)
        engine.shutdown()
        origin.server.shutdown()
    }

    /// After `bandwidthGroupsChanged` a running transfer follows its session's new groups at once:
    /// taken out of a 20 KB/s group, 1 MB no longer needs 50 s.
    @Test func runningTransfersFollowChangedGroups() throws {
        let origin = try TestOrigin()
        let resolver = TestGroupResolver(["moved": [BandwidthGroup(name: "slow", bytesPerSecond: 20_000)]])
        let engine = Self.makeEngine(resolver)
        let observer = RecordingObserver()
        let handle = engine.submit(TransferSpec(label: "t", session: "moved", url: origin.url("/bytes/1000000")), observer: observer)
        while handle.bytesReceived == 0 && observer.outcome.withLock({ $0 }) == nil { usleep(10_000) }
        resolver.set("moved", [BandwidthGroup(name: "fast", bytesPerSecond: 100_000_000)])
        engine.bandwidthGroupsChanged()
        let outcome = try #require(observer.wait(seconds: 20))
        #expect(outcome.failure == nil && outcome.bytesReceived == 1_000_000)
        engine.shutdown()
        origin.server.shutdown()
    }

    /// Answers are cached until the generation changes: a session first in no group is asked about
    /// once for two transfers, then again after a change, and its next transfer keeps to the group.
    @Test func aResolverIsAskedAgainWhenItsGenerationChanges() throws {
        let origin = try TestOrigin()
        let resolver = TestGroupResolver([:])
        let engine = Self.makeEngine(resolver)
        func fetch(_ size: Int) throws -> TransferOutcome {
            let observer = RecordingObserver()
            engine.submit(TransferSpec(label: "t", session: "regrouped", url: origin.url("/bytes/\(size)")), observer: observer)
            return try #require(observer.wait(seconds: 30))
        }
        #expect(try fetch(1000).failure == nil)
        #expect(try fetch(1000).failure == nil)
        #expect(resolver.asked.withLock { $0 } == ["regrouped"])
        let rate: Int64 = 50_000
        resolver.set("regrouped", [BandwidthGroup(name: "tenant", bytesPerSecond: rate)])
        let size = 150_000
        let start = MonotonicClock.now()
        #expect(try fetch(size).bytesReceived == Int64(size))
        let elapsed = Self.seconds(since: start)
        #expect(resolver.asked.withLock { $0 } == ["regrouped", "regrouped"])
        let floor = Double(Int64(size) - Self.allowance(rate: rate, transfers: 1)) / Double(rate)
        #expect(elapsed >= floor, "\(size) bytes in \(elapsed) s against \(rate) B/s")
        engine.shutdown()
        origin.server.shutdown()
    }
}
