import Testing
@testable import JSON
@testable import TransferCore
@testable import TransferModel

struct UpcomingEventsTests {
    func event(_ seq: Int64, _ type: EventType = .taskCreated) -> Event {
        Event(id: "evt_\(seq)", seq: seq, session: "s", type: type, task: "t", at: Timestamp(milliseconds: 0), data: [])
    }

    func takeAll(_ upcoming: inout UpcomingEvents) -> [Int64] {
        var seqs: [Int64] = []
        while let e = upcoming.take() { seqs.append(e.seq) }
        return seqs
    }

    @Test func readsTheJournalFirstThenFollowsCommittedEvents() {
        var upcoming = UpcomingEvents(after: 3)
        #expect(upcoming.needsRead)
        upcoming.read([event(4), event(5)], pageSize: 64)
        #expect(!upcoming.needsRead)
        #expect(takeAll(&upcoming) == [4, 5])
        // Reached the end of the journal: what is committed next joins without a read.
        upcoming.committed([event(6), event(0, .taskProgress), event(7)])
        #expect(!upcoming.needsRead)
        #expect(takeAll(&upcoming) == [6, 7])
        #expect(upcoming.known == 7)
    }

    @Test func aFullPageMeansReadingAgain() {
        var upcoming = UpcomingEvents(after: 0)
        upcoming.read([event(1), event(2)], pageSize: 2)
        upcoming.committed([event(9)])  // may be after events not read yet: not taken
        #expect(takeAll(&upcoming) == [1, 2])
        #expect(upcoming.needsRead && upcoming.known == 2)
        upcoming.read([event(3)], pageSize: 2)
        #expect(takeAll(&upcoming) == [3])
        #expect(!upcoming.needsRead)
    }

    @Test func aGapOrADuplicateIsNeverDeliveredOutOfOrder() {
        var upcoming = UpcomingEvents(after: 0)
        upcoming.read([event(1)], pageSize: 64)
        upcoming.committed([event(1)])  // already read: dropped
        upcoming.committed([event(3)])  // 2 missing: read the journal again
        #expect(takeAll(&upcoming) == [1])
        #expect(upcoming.needsRead)
        upcoming.read([event(1), event(2), event(3)], pageSize: 64)
        #expect(takeAll(&upcoming) == [2, 3])
    }
}
