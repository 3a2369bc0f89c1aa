import Testing
@testable import TransferEngine

/// The order in which a loop starts waiting transfers: sessions in turn, priority within a
/// session, discretionary sessions only when allowed. No transfer runs: `next` only picks.
final class LoopAdmissionTests {
    /// A loop to hang handles on (its thread idles; nothing is submitted to it).
    static let loop = MultiLoop(index: 99, policy: NetworkPolicy(), shared: EngineShared(maxRunning: 10, maxBytesPerSecond: nil))
    /// The queues a test made: a transfer `next` picked counts as running in its queue, which it
    /// refers to, until it finishes; finished here, or LeakSanitizer reports each such pair.
    private var queues: [SessionQueue] = []

    deinit {
        for q in queues {
            for t in q.runningList { q.finished(t) }
        }
    }

    final class Ignoring: TransferObserver, @unchecked Sendable {
        func transferStarted(_ handle: TransferHandle) {}
        func transferReceivedResponse(_ handle: TransferHandle, _ response: ResponseHead, resumedAtOffset: Int64?) {}
        func transferRedirected(_ handle: TransferHandle, from: String, to: String, status: Int) {}
        func transferCompleted(_ handle: TransferHandle, _ outcome: TransferOutcome) {}
    }

    func transfer(_ label: String, in queue: SessionQueue, priority: Double = 0.5, sequence: UInt64) -> Transfer {
        var spec = TransferSpec(label: label, session: queue.identifier, url: "http://127.0.0.1:9/\(label)")
        spec.priority = priority
        spec.sequence = sequence
        if !queues.contains(where: { $0 === queue }) { queues.append(queue) }
        return Transfer(handle: TransferHandle(spec: spec, loop: Self.loop), observer: Ignoring(), policy: NetworkPolicy(),
                        session: queue, counters: LoopCounters())
    }

    func drain(_ admission: inout LoopAdmission, discretionaryAllowed: Bool = true) -> [String] {
        var order: [String] = []
        while let t = admission.next(discretionaryAllowed: { discretionaryAllowed }) { order.append(t.spec.label) }
        return order
    }

    @Test func sessionsTakeTurnsAndPriorityOrdersWithinOne() {
        var admission = LoopAdmission()
        let busy = SessionQueue(identifier: "busy"), single = SessionQueue(identifier: "single")
        for i in 0..<4 { admission.enqueue(transfer("a\(i)", in: busy, priority: i == 3 ? 0.9 : 0.5, sequence: UInt64(i)), in: busy) }
        admission.enqueue(transfer("b0", in: single, sequence: 10), in: single)
        #expect(admission.urgentWaiting == 5)
        let order = drain(&admission)
        #expect(order == ["a3", "b0", "a0", "a1", "a2"])
        #expect(admission.urgentWaiting == 0 && !admission.hasOffers)
    }

    @Test func aSessionAtItsLimitSitsOutUntilOffered() {
        var admission = LoopAdmission()
        let limited = SessionQueue(identifier: "limited"), other = SessionQueue(identifier: "other")
        limited.settings.maxConcurrentTasks = 1
        for i in 0..<2 { admission.enqueue(transfer("l\(i)", in: limited, sequence: UInt64(i)), in: limited) }
        for i in 0..<2 { admission.enqueue(transfer("o\(i)", in: other, sequence: UInt64(10 + i)), in: other) }
        let first = drain(&admission)
        #expect(first == ["l0", "o0", "o1"])
        // l0 finishes: the session may start its next one.
        let running = limited.runningList[0]
        limited.finished(running)
        admission.offer(limited)
        let next = drain(&admission)
        #expect(next == ["l1"])
    }

    @Test func discretionarySessionsWaitTheirTurnAfterUrgentWork() {
        var admission = LoopAdmission()
        let spare = SessionQueue(identifier: "spare"), urgent = SessionQueue(identifier: "urgent")
        admission.reclassify(spare, discretionary: true)
        admission.enqueue(transfer("d0", in: spare, sequence: 0), in: spare)
        admission.enqueue(transfer("u0", in: urgent, sequence: 1), in: urgent)
        #expect(admission.urgentWaiting == 1 && admission.discretionaryWaiting == 1)
        let urgentOnly = drain(&admission, discretionaryAllowed: false)
        #expect(urgentOnly == ["u0"])
        #expect(admission.hasOffers)
        let discretionaryToo = drain(&admission, discretionaryAllowed: true)
        #expect(discretionaryToo == ["d0"])
    }

    @Test func reclassifyingMovesTheWaitingCount() {
        var admission = LoopAdmission()
        let q = SessionQueue(identifier: "q")
        for i in 0..<3 { admission.enqueue(transfer("t\(i)", in: q, sequence: UInt64(i)), in: q) }
        admission.reclassify(q, discretionary: true)
        #expect(admission.urgentWaiting == 0 && admission.discretionaryWaiting == 3)
        let held = drain(&admission, discretionaryAllowed: false)
        #expect(held.isEmpty)
        let order = drain(&admission, discretionaryAllowed: true)
        #expect(order == ["t0", "t1", "t2"])
        #expect(admission.discretionaryWaiting == 0)
    }
}
