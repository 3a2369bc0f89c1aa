import Testing
@testable import SQLiteStore
@testable import TransferModel
@testable import TransferStore

/// What every `TransferStore` must do, run against each implementation: sessions and tasks.
@Suite struct StoreConformanceTests {
    typealias F = Fixture

    @Test(arguments: StoreKind.allCases) func sessionsRoundTrip(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session("s1")), .upsertSession(F.session("s2"))])
            var changed = F.session("s1")
            changed.lifecycle = "invalidating"
            changed.invalidateMode = "cancel"
            changed.delegate = #"{"url":"https://hooks.example.com"}"#
            changed.configuration = #"{"credentials":{"user":"u"}}"#
            changed.createdAt = F.start + 99  // a re-attach never moves the creation time
            try store.apply([.upsertSession(changed), .setAcked(session: "s1", through: 5), .setDelivered(session: "s1", through: 3),
                             .insertEvents([F.event(1), F.event(2), F.event(3)])])
            // Marks only rise.
            try store.apply([.setAcked(session: "s1", through: 2), .setDelivered(session: "s1", through: 1)])

            let sessions = Dictionary(uniqueKeysWithValues: try store.loadSessions().map { ($0.identifier, $0) })
            #expect(sessions.count == 2)
            var expected = changed
            expected.createdAt = F.start
            expected.ackedThrough = 5
            expected.deliveredThrough = 3
            expected.lastEventSeq = 3
            #expect(sessions["s1"] == expected)
            #expect(sessions["s2"] == F.session("s2"))
        }
    }

    @Test(arguments: StoreKind.allCases) func tasksAreStoredAndSummarised(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()),
                             F.insert(F.task("a", sequence: 1, state: .running), F.task("b", sequence: 2, key: "k-b"),
                                      F.task("c", sequence: 3, state: .completed))])
            let b = try #require(try store.loadTask(session: "s1", id: "b"))
            #expect(b.sequence == 2 && b.state == .suspended && b.idempotencyKey == "k-b" && b.url == "https://example.com/b")
            #expect(try store.loadTask(session: "s1", id: "zz") == nil)
            #expect(try store.loadTask(session: "s2", id: "b") == nil)
            #expect(try store.taskExists(session: "s1", id: "c"))
            #expect(try !store.taskExists(session: "s1", id: "zz"))
            #expect(Set(try store.loadUnfinishedTasks().map(\.id)) == ["a", "b"])

            let summaries = try store.loadSessionSummaries(["s1", "empty"])
            #expect(summaries["s1"]?.maxSequence == 3)
            #expect(summaries["s1"]?.counts[.running] == 1 && summaries["s1"]?.counts[.suspended] == 1)
            #expect(summaries["s1"]?.counts[.completed] == 1 && summaries["s1"]?.counts[.canceling] == 0)
            #expect(summaries["empty"]?.maxSequence == 0 && summaries["empty"]?.counts.values.allSatisfy { $0 == 0 } == true)
        }
    }

    @Test(arguments: StoreKind.allCases) func taskUpdatesRespectCompletion(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()),
                             F.insert(F.task("run", sequence: 1, state: .running), F.task("done", sequence: 2, state: .running))])
            // An attempt's report keeps the stored state (a suspend was stored meanwhile).
            try store.apply([.updateState(session: "s1", id: "run", state: .suspended, phase: .waiting)])
            var report = F.task("run", sequence: 1, state: .running)
            report.progress.bytesReceived = 42
            report.phase = .transferring
            try store.apply([.updateTaskKeepingState(report, document: report.storageDocument())])
            var run = try #require(try store.loadTask(session: "s1", id: "run"))
            #expect(run.state == .suspended && run.phase == .transferring && run.progress.bytesReceived == 42)

            // A completion, then changes that must not undo it.
            var done = F.task("done", sequence: 2, state: .completed)
            done.progress.bytesReceived = 1000
            try store.apply([F.update(done)])
            var late = F.task("done", sequence: 2, state: .running)
            late.progress.bytesReceived = 7
            try store.apply([.updateTaskKeepingState(late, document: late.storageDocument()),
                             .updateState(session: "s1", id: "done", state: .running, phase: .waiting),
                             .flushProgress([ProgressUpdate(session: "s1", id: "done", progress: late.progress)])])
            let stored = try #require(try store.loadTask(session: "s1", id: "done"))
            #expect(stored.state == .completed && stored.completedAt == done.completedAt && stored.progress.bytesReceived == 1000)
            #expect(try store.completedBefore(Timestamp(milliseconds: F.start + 5000), limit: 10).map(\.id) == ["done"])
            #expect(try store.completedBefore(Timestamp(milliseconds: F.start), limit: 10).isEmpty)

            // Details change whatever the state.
            try store.apply([.updateDetails(session: "s1", id: "done", priority: 0.9, description: "nightly")])
            let detailed = try #require(try store.loadTask(session: "s1", id: "done"))
            #expect(detailed.priority == 0.9 && detailed.description == "nightly" && detailed.state == .completed)

            // Progress is flushed only into running tasks.
            try store.apply([.updateState(session: "s1", id: "run", state: .running, phase: .waiting)])
            var progress = TaskProgress()
            progress.bytesReceived = 500
            progress.bytesExpectedToReceive = 900
            try store.apply([.flushProgress([ProgressUpdate(session: "s1", id: "run", progress: progress)])])
            run = try #require(try store.loadTask(session: "s1", id: "run"))
            #expect(run.state == .running && run.progress.bytesReceived == 500 && run.progress.bytesExpectedToReceive == 900)
        }
    }

    @Test(arguments: StoreKind.allCases) func listingPagesAndFilters(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()), .upsertSession(F.session("s2")),
                             F.insert(F.task("e", sequence: 5, state: .completed, kind: .upload),
                                      F.task("a", sequence: 1), F.task("c", sequence: 3, state: .completed),
                                      F.task("b", sequence: 2, kind: .upload), F.task("d", sequence: 4)),
                             F.insert(F.task("x", sequence: 1, session: "s2"))])
            func ids(after: Int64 = 0, state: TaskState? = nil, kind: TaskKind? = nil, limit: Int = 10) throws -> [String] {
                try store.listTasks(session: "s1", after: after, state: state, kind: kind, limit: limit).map(\.id)
            }
            #expect(try ids() == ["a", "b", "c", "d", "e"])
            #expect(try ids(limit: 2) == ["a", "b"])
            #expect(try ids(after: 2, limit: 2) == ["c", "d"])
            #expect(try ids(after: 5).isEmpty)
            #expect(try ids(state: .completed) == ["c", "e"])
            #expect(try ids(kind: .upload) == ["b", "e"])
            #expect(try ids(after: 2, state: .suspended, kind: .download) == ["d"])
        }
    }

    @Test(arguments: StoreKind.allCases) func duplicatesConflictWithTheStoredTask(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()), F.insert(F.task("a", sequence: 1, key: "k1"))])
            // The same id, in a batch with a task that would be fine alone.
            do {
                try store.apply([F.insert(F.task("fresh", sequence: 2), F.task("a", sequence: 3))])
                Issue.record("a duplicate id was stored")
            } catch StoreError.conflict(let existing) {
                #expect(existing.id == "a" && existing.sequence == 1)
            }
            // Another id, the same idempotency key.
            do {
                try store.apply([F.insert(F.task("other", sequence: 4, key: "k1"))])
                Issue.record("a duplicate idempotency key was stored")
            } catch StoreError.conflict(let existing) {
                #expect(existing.id == "a" && existing.idempotencyKey == "k1")
            }
            #expect(try store.listTasks(session: "s1", after: 0, state: nil, kind: nil, limit: 10).map(\.id) == ["a"])
            // The same id and key in another session are no conflict.
            try store.apply([F.insert(F.task("a", sequence: 1, session: "s2", key: "k1"))])
            #expect(try store.taskExists(session: "s2", id: "a"))
        }
    }

    /// A retried creation finds its task by key, with the reply that created it and the session's
    /// sensitive headers as they were then.
    @Test(arguments: StoreKind.allCases) func aTaskIsFoundByItsIdempotencyKey(kind: StoreKind) throws {
        try kind.withStore { store in
            var task = F.task("a", sequence: 1, key: "k1")
            task.creationReply = Array(#"{"id":"a","state":"running"}"#.utf8)
            task.sensitiveHeaders = ["x-api-key"]
            try store.apply([.upsertSession(F.session()), F.insert(task)])
            let found = try store.loadTask(session: "s1", idempotencyKey: "k1")
            #expect(found?.id == "a")
            #expect(found?.creationReply == task.creationReply)
            #expect(found?.sensitiveHeaders == ["x-api-key"])
            #expect(try store.loadTask(session: "s1", idempotencyKey: "k2") == nil)
            #expect(try store.loadTask(session: "s2", idempotencyKey: "k1") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases) func deletedTasksFreeTheirIDs(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()), F.insert(F.task("a", sequence: 1, key: "k"), F.task("b", sequence: 2))])
            try store.apply([.deleteTask(session: "s1", id: "a")])
            #expect(try !store.taskExists(session: "s1", id: "a"))
            try store.apply([F.insert(F.task("a", sequence: 3, key: "k"))])
            #expect(try store.listTasks(session: "s1", after: 0, state: nil, kind: nil, limit: 10).map(\.sequence) == [2, 3])
        }
    }
}
