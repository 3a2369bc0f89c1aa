import Testing
@testable import SQLiteStore
@testable import TransferModel
@testable import TransferStore

/// What every `TransferStore` must do with what it keeps compactly (the SQLite store leaves out a
/// task's defaults and keeps a completion's events as references to the task): read it all back
/// as it was written.
extension StoreConformanceTests {
    typealias R = StoredRecords

    @Test(arguments: StoreKind.allCases) func storedTasksReadBackAsTheyWere(kind: StoreKind) throws {
        try kind.withStore { store in
            let plain = F.task("plain", sequence: 1)
            let unusual = R.unusual()
            var running = R.completedDownload("d", sequence: 2)
            running.state = .running
            running.phase = .transferring
            running.completedAt = nil
            try store.apply([.upsertSession(F.session()), F.insert(plain, running, unusual)])
            let done = R.completedDownload("d", sequence: 2)
            try store.apply([F.update(done)])

            for expected in [plain, unusual, done] {
                let loaded = try #require(try store.loadTask(session: "s1", id: expected.id))
                #expect(R.same(loaded, expected), "\(expected.id): \(String(decoding: loaded.jsonBytes(), as: UTF8.self))")
            }
            let unfinished = try store.loadUnfinishedTasks().sorted { $0.sequence < $1.sequence }
            #expect(unfinished.count == 2 && R.same(unfinished[0], plain) && R.same(unfinished[1], unusual))
        }
    }

    @Test(arguments: StoreKind.allCases) func aCompletionsEventsReadBackAsJournaled(kind: StoreKind) throws {
        try kind.withStore { store in
            var running = R.completedDownload("d", sequence: 1)
            running.state = .running
            running.completedAt = nil
            try store.apply([.upsertSession(F.session()), F.insert(running)])
            let done = R.completedDownload("d", sequence: 1)
            let (insert, journaled) = R.completion(done, firstSeq: 1)
            try store.apply([F.update(done), insert])

            func readBack() throws {
                let events = try store.events(session: "s1", after: 0, limit: 10)
                #expect(events.map(\.id) == journaled.map(\.id) && events.map(\.type) == journaled.map(\.type))
                #expect(events.map(\.data) == journaled.map(\.data))
                #expect(events.map(\.at) == journaled.map(\.at) && events.map(\.task) == journaled.map(\.task))
                let completed = try #require(try store.event(session: "s1", id: journaled[2].id))
                #expect(completed.seq == 3 && completed.data == done.jsonBytes())
            }
            try readBack()
            // The task changes after its completion (PATCH): its events still say what they said.
            try store.apply([.updateDetails(session: "s1", id: "d", priority: 0.9, description: "later")])
            try readBack()
            #expect(try store.loadTask(session: "s1", id: "d")?.description == "later")
            // And outlive it.
            try store.apply([.deleteTask(session: "s1", id: "d")])
            try readBack()
        }
    }

    @Test(arguments: StoreKind.allCases) func eventsOfAnotherKindOfBatchKeepTheirData(kind: StoreKind) throws {
        try kind.withStore { store in
            try store.apply([.upsertSession(F.session()), F.insert(F.task("d", sequence: 1, state: .running))])
            let done = R.completedDownload("d", sequence: 1)
            var (_, journaled) = R.completion(done, firstSeq: 1)
            // Data that is not the task's (a response before a retry), and events before the update.
            journaled[0] = Event(id: journaled[0].id, seq: 1, session: "s1", type: .taskResponseReceived, task: "d", at: journaled[0].at,
                                 data: Array(#"{"status":503}"#.utf8))
            try store.apply([.insertEvents([journaled[0]]), F.update(done), .insertEvents(Array(journaled[1...]))])
            #expect(try store.events(session: "s1", after: 0, limit: 10).map(\.data) == journaled.map(\.data))
        }
    }
}
