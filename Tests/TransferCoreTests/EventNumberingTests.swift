import Testing
@testable import TransferCore

struct EventNumberingTests {
    func batch(_ numbering: inout EventNumbering, _ count: Int) -> ClosedRange<Int64> {
        let first = numbering.take()
        for _ in 1..<count { _ = numbering.take() }
        return first...(first + Int64(count) - 1)
    }

    @Test func aRefusedBatchGivesItsSeqsBack() {
        var numbering = EventNumbering(next: 11)
        let refused = batch(&numbering, 2)
        numbering.refused(refused)
        #expect(numbering.next == 11)
        #expect(batch(&numbering, 1) == 11...11)
    }

    @Test func refusedBatchesWaitForThoseNumberedAfterThemAndGoBackTogether() {
        var numbering = EventNumbering(next: 1)
        let first = batch(&numbering, 2), second = batch(&numbering, 3)
        numbering.refused(first)
        #expect(numbering.next == 6, "the second batch may still be stored: the first one's seqs cannot be reused yet")
        numbering.refused(second)
        #expect(numbering.next == 1)
    }

    @Test func aLaterBatchStoredLeavesTheRefusedSeqsSpent() {
        var numbering = EventNumbering(next: 1)
        let first = batch(&numbering, 2), second = batch(&numbering, 1), third = batch(&numbering, 1)
        numbering.refused(first)
        numbering.stored(second)
        numbering.refused(third)
        // Seq 3 is stored: only the third batch's seq can be used again.
        #expect(numbering.next == 4)
    }

    @Test func storedBatchesChangeNothing() {
        var numbering = EventNumbering(next: 1)
        numbering.stored(batch(&numbering, 4))
        #expect(numbering.next == 5)
    }
}
