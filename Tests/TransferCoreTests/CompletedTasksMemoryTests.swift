import TestSupport
import Testing
@testable import TransferCore
@testable import TransferModel

/// Memory holds the tasks that can still change: a durable session's task leaves it as it
/// completes, and every read finds it in the store; an ephemeral session's stays (its store is
/// memory, and a data task's body lives only in its entry).
@Suite(.serialized)
struct CompletedTasksMemoryTests {
    static let count = 40

    @Test func durableSessionKeepsNoCompletedTaskInMemory() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let ids = try (0..<Self.count).map { try core.download(origin.url("/bytes/\(1000 + $0)"), in: session) }
            // Long-polls that were waiting when each task completed.
            for id in ids { #expect(try core.completed(id, in: session).error == nil) }

            #expect(session.locked { session.tasks.isEmpty })
            // Its tables gave their storage back too.
            #expect(session.locked { session.tasks.capacity == 0 && session.reservedIDs.capacity == 0 })
            #expect(session.locked { session.counts[.completed] } == Self.count)

            // Every read comes from the store: a task, its JSON, a long-poll, the listing.
            for (i, id) in ids.enumerated() {
                let task = try core.coordinator.record(session, id)
                #expect(task.state == .completed && task.result?.size == Int64(1000 + i))
                #expect(try CoreHarness.wait { core.coordinator.taskJSON(session, id, answer: $0) }.get() == task.jsonBytes())
            }
            #expect(try core.completed(ids[0], in: session).result?.size == 1000)
            let page = try CoreHarness.wait { core.coordinator.listTasks(session, after: 0, state: .completed, kind: nil, limit: 1000, answer: $0) }.get()
            #expect(page.tasks.map(\.id) == ids)
            #expect(page.tasks.allSatisfy { $0.result != nil })
        }
    }

    @Test func ephemeralSessionKeepsItsCompletedTasksAndTheirBodies() throws {
        try CoreHarness.withSession(.ephemeral) { origin, core, session in
            let outcome = try core.create(#"{"kind": "data", "request": {"url": "\#(origin.url("/bytes/300"))"}}"#, in: session).get()
            guard case .created(let created) = outcome else { throw HarnessError("expected a new task, got \(outcome)") }
            let id = created[0].id
            #expect(try core.completed(id, in: session).error == nil)

            #expect(session.locked { session.tasks[id]?.memoryBody?.count } == 300)
        }
    }

    @Test func sessionGoingQuietTrimsTheHeap() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let before = core.coordinator.heapTrimmer.trims
            let id = try core.download(origin.url("/bytes/1000"), in: session)
            _ = try core.completed(id, in: session)

            try CoreHarness.poll("a heap trim") { core.coordinator.heapTrimmer.trims > before }
        }
    }
}

/// GETs of completed tasks that left memory are answered from a bounded cache of their encodings,
/// which a change or a deletion of the task empties.
@Suite(.serialized)
struct CompletedReplyCacheTests {
    @Test func aReadTaskIsCachedAndAPatchOrDeleteForgetsIt() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let id = try core.download(origin.url("/bytes/100"), in: session)
            _ = try core.completed(id, in: session)
            let replies = core.coordinator.completedReplies
            #expect(replies.count == 0)  // completing adds nothing

            let first = try CoreHarness.wait { core.coordinator.taskJSON(session, id, answer: $0) }.get()
            #expect(replies.lookup(session: "s", id: id).reply == first)

            _ = try CoreHarness.wait { core.coordinator.update(session, id, priority: 0.9, description: nil, completion: $0) }.get()
            #expect(replies.lookup(session: "s", id: id).reply == nil)
            #expect(try core.coordinator.record(session, id).priority == 0.9)
            #expect(try CoreHarness.wait { core.coordinator.taskJSON(session, id, answer: $0) }.get() == core.coordinator.record(session, id).jsonBytes())

            try CoreHarness.wait { core.coordinator.delete(session, id, completion: $0) }.get()
            #expect(replies.lookup(session: "s", id: id).reply == nil)
            #expect(throws: Refusal.self) { try CoreHarness.wait { core.coordinator.taskJSON(session, id, answer: $0) }.get() }
        }
    }

    @Test func itHoldsAtMostItsCapacity() {
        let cache = CompletedReplyCache(capacity: 3)
        for i in 0..<10 {
            cache.insert([UInt8(i)], session: "s", id: "t\(i)", generation: cache.lookup(session: "s", id: "t\(i)").generation)
        }
        #expect(cache.count == 3)
        // A reply read before an invalidation is not kept after it.
        let stale = cache.lookup(session: "s", id: "x").generation
        cache.invalidate(session: "s", id: "t9")
        cache.insert([1], session: "s", id: "x", generation: stale)
        #expect(cache.lookup(session: "s", id: "x").reply == nil)
    }
}
