import Testing
@testable import SQLiteStore
@testable import TransferModel
@testable import TransferStore

/// What every `TransferStore` must do, run against each implementation: events, deliveries,
/// blobs, cookies, removal, retention and the atomicity of a batch.
extension StoreConformanceTests {
    @Test(arguments: StoreKind.allCases) func eventsAreReadInOrder(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()), .insertEvents([F.event(1), F.event(2), F.event(3)])])
            try store.apply([.insertEvents([F.event(4), F.event(5)]), .insertEvents([F.event(1, session: "s2")])])
            #expect(try store.events(session: "s1", after: 0, limit: 10).map(\.seq) == [1, 2, 3, 4, 5])
            #expect(try store.events(session: "s1", after: 2, limit: 2).map(\.seq) == [3, 4])
            #expect(try store.events(session: "s1", after: 5, limit: 10).isEmpty)
            #expect(try store.events(session: "s2", after: 0, limit: 10).map(\.id) == ["ev-s2-1"])

            let event = try #require(try store.event(session: "s1", id: "ev-s1-4"))
            #expect(event.seq == 4 && event.type == .taskCreated && event.task == "t4")
            #expect(event.at == Timestamp(milliseconds: F.start) && event.data == Array(#"{"n":4}"#.utf8))
            #expect(try store.event(session: "s2", id: "ev-s1-4") == nil)

            // A seq is never stored twice.
            #expect(throws: (any Error).self) { try store.apply([.insertEvents([F.event(3)])]) }
        }
    }

    @Test(arguments: StoreKind.allCases) func attemptsAndMarks(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()), .upsertSession(F.session("s2"))])
            try store.apply([.recordAttempts([F.attempt(1), F.attempt(1, session: "s2")]),
                             .setDelivered(session: "s1", through: 1), .setAcked(session: "s1", through: 1)])
            try store.apply([.recordAttempts([F.attempt(2, status: nil), F.attempt(3, status: 204)])])

            let all = try store.attempts(session: "s1", after: 0, limit: 10)
            #expect(all.map(\.attempt) == [F.attempt(1), F.attempt(2, status: nil), F.attempt(3, status: 204)])
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.position < $1.position })
            let page = try store.attempts(session: "s1", after: all[0].position, limit: 1)
            #expect(page.map(\.attempt.seq) == [2])
            #expect(try store.attempts(session: "s2", after: 0, limit: 10).map(\.attempt.seq) == [1])

            let row = try #require(try store.loadSessions().first { $0.identifier == "s1" })
            #expect(row.deliveredThrough == 1 && row.ackedThrough == 1)
        }
    }

    @Test(arguments: StoreKind.allCases) func blobRecords(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.insertBlob(F.blob("old")), .insertBlob(F.blob("new", at: F.start + 10_000)),
                             .insertBlob(F.blob("spooled", owner: "s1/t1"))])
            #expect(try store.blob("old") == F.blob("old"))
            #expect(try store.blob("spooled")?.owner == "s1/t1")
            #expect(try store.blob("missing") == nil)
            // Only client blobs expire, oldest first.
            #expect(try store.expiredBlobs(before: Timestamp(milliseconds: F.start + 20_000), limit: 10) == ["old", "new"])
            #expect(try store.expiredBlobs(before: Timestamp(milliseconds: F.start + 20_000), limit: 1) == ["old"])
            try store.apply([.deleteBlob("old")])
            #expect(try store.blob("old") == nil)
            #expect(throws: (any Error).self) { try store.apply([.insertBlob(F.blob("new"))]) }
        }
    }

    @Test(arguments: StoreKind.allCases) func cookieJars(kind: StoreKind) throws {
        try kind.withStore { store in
            let now = Timestamp.now().milliseconds / 1000
            try store.apply([.upsertSession(F.session())])
            try store.apply([.replaceCookies(session: "s1", [F.cookie("session", expires: nil), F.cookie("later", expires: now + 3600),
                                                             F.cookie("gone", expires: now - 10)])])
            let loaded = try store.loadCookies(session: "s1").sorted { $0.name < $1.name }
            #expect(loaded == [F.cookie("later", expires: now + 3600), F.cookie("session", expires: nil)])
            // A jar is replaced whole.
            try store.apply([.replaceCookies(session: "s1", [F.cookie("only", expires: nil)])])
            #expect(try store.loadCookies(session: "s1").map(\.name) == ["only"])
            // A late jar of a session that is gone is not stored.
            try store.apply([.replaceCookies(session: "nobody", [F.cookie("late", expires: nil)])])
            #expect(try store.loadCookies(session: "nobody").isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases) func deletingASessionTakesWhatItOwns(kind: StoreKind) throws {
        try kind.withStore { store in
            for s in ["s1", "s2"] {
                try store.apply([.upsertSession(F.session(s)), F.insert(F.task("t1", sequence: 1, session: s)),
                                 .insertEvents([F.event(1, session: s)]), .recordAttempts([F.attempt(1, session: s)]),
                                 .replaceCookies(session: s, [F.cookie("c", expires: nil)]),
                                 .insertBlob(F.blob("body-\(s)", owner: "\(s)/t1"))])
            }
            try store.apply([.insertBlob(F.blob("client"))])
            let report = try store.apply([.deleteSession("s1")])
            #expect(report.removedBlobs == ["body-s1"])
            #expect(try store.loadSessions().map(\.identifier) == ["s2"])
            #expect(try !store.taskExists(session: "s1", id: "t1"))
            #expect(try store.events(session: "s1", after: 0, limit: 10).isEmpty)
            #expect(try store.attempts(session: "s1", after: 0, limit: 10).isEmpty)
            #expect(try store.loadCookies(session: "s1").isEmpty)
            #expect(try store.blob("body-s1") == nil && store.blob("client") != nil && store.blob("body-s2") != nil)
            #expect(try store.taskExists(session: "s2", id: "t1") && store.events(session: "s2", after: 0, limit: 10).count == 1)
            #expect(try store.loadCookies(session: "s2").count == 1 && store.attempts(session: "s2", after: 0, limit: 10).count == 1)
        }
    }

    @Test(arguments: StoreKind.allCases) func retentionKeepsEachSessionsNewestEvent(kind: StoreKind) throws {
        try kind.withStore { store in
            let cutoff = Timestamp(milliseconds: F.start + 100)
            try store.apply([.upsertSession(F.session()), .upsertSession(F.session("s2")),
                             .insertEvents([F.event(1), F.event(2), F.event(3, at: F.start + 200)]),
                             .insertEvents([F.event(1, session: "s2"), F.event(2, session: "s2")]),
                             .insertEvents([F.event(1, session: "s3")]),
                             .recordAttempts([F.attempt(1), F.attempt(3, at: F.start + 200)])])
            try store.apply([.deleteEventsOlder(than: cutoff, limit: 10)])
            #expect(try store.events(session: "s1", after: 0, limit: 10).map(\.seq) == [3])
            // Old, but the newest of their sessions: numbering continues from them after a restart.
            #expect(try store.events(session: "s2", after: 0, limit: 10).map(\.seq) == [2])
            #expect(try store.events(session: "s3", after: 0, limit: 10).map(\.seq) == [1])
            #expect(try store.loadSessions().first { $0.identifier == "s2" }?.lastEventSeq == 2)
            #expect(try store.attempts(session: "s1", after: 0, limit: 10).map(\.attempt.seq) == [3])

            // At most `limit` events go in one pass.
            try store.apply([.insertEvents([F.event(4), F.event(5), F.event(6, at: F.start + 300)])])
            try store.apply([.deleteEventsOlder(than: Timestamp(milliseconds: F.start + 250), limit: 1)])
            #expect(try store.events(session: "s1", after: 0, limit: 10).count == 3)
        }
    }

    @Test(arguments: StoreKind.allCases) func aFailingChangeUndoesItsWholeBatch(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()), F.insert(F.task("a", sequence: 1), F.task("z", sequence: 5))])
            let failing: [StoreChange] = [.upsertSession(F.session("s9")), .insertEvents([F.event(1, session: "s9")]),
                                          .insertBlob(F.blob("b9")), .setAcked(session: "s1", through: 7),
                                          .deleteTask(session: "s1", id: "z"), F.insert(F.task("a", sequence: 2))]
            let fine: [StoreChange] = [.insertEvents([F.event(1)]), F.insert(F.task("b", sequence: 3))]
            // Submitted together, so a store that groups batches may commit them in one transaction.
            let results = store.applyAll([failing, fine])
            #expect(throws: (any Error).self) { try results[0].get() }
            #expect(throws: Never.self) { try results[1].get() }

            #expect(try store.loadSessions().map(\.identifier) == ["s1"])
            #expect(try store.loadSessions().first?.ackedThrough == 0)
            #expect(try store.events(session: "s9", after: 0, limit: 10).isEmpty)
            #expect(try store.blob("b9") == nil)
            #expect(try store.loadTask(session: "s1", id: "a")?.sequence == 1 && store.taskExists(session: "s1", id: "z"))
            #expect(try store.taskExists(session: "s1", id: "b") && store.events(session: "s1", after: 0, limit: 10).count == 1)
        }
    }

    @Test(arguments: StoreKind.allCases) func aBatchOfUpdatesAndOneFailingInsertChangesNothing(kind: StoreKind) throws {
        try kind.withStore { store in
            var task = F.task("a", sequence: 1, state: .running)
            try store.apply([.upsertSession(F.session()), F.insert(task), .insertEvents([F.event(1)])])
            task.state = .completed
            // The kind of batch a completion is: an update with its events, one of them a duplicate.
            let failing: [StoreChange] = [F.update(task), .recordAttempts([F.attempt(1)]), .insertEvents([F.event(2), F.event(1)])]
            #expect(throws: (any Error).self) { try store.apply(failing) }

            #expect(try store.loadTask(session: "s1", id: "a")?.state == .running)
            #expect(try store.events(session: "s1", after: 0, limit: 10).map(\.seq) == [1])
            #expect(try store.attempts(session: "s1", after: 0, limit: 10).isEmpty)
        }
    }
}
