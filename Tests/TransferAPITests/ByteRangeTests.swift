import Testing
@testable import TransferAPI

struct ByteRangeTests {
    @Test func resolvesSingleRanges() {
        #expect(ByteRange.resolve(nil, size: 100) == .whole)
        #expect(ByteRange.resolve("bytes=0-9", size: 100) == .parts([0...9]))
        #expect(ByteRange.resolve("bytes=90-", size: 100) == .parts([90...99]))
        #expect(ByteRange.resolve("bytes=-10", size: 100) == .parts([90...99]))
        #expect(ByteRange.resolve("bytes=50-500", size: 100) == .parts([50...99]))
        #expect(ByteRange.resolve("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=-0", size: 100) == .unsatisfiable)
        #expect(ByteRange.resolve("items=0-1", size: 100) == .whole)
        #expect(ByteRange.resolve("bytes=9-1", size: 100) == .whole)
        #expect(ByteRange.resolve("bytes=x-1", size: 100) == .whole)
    }

    @Test func resolvesSeveralRangesSortedAndCoalesced() {
        #expect(ByteRange.resolve("bytes=0-1,5-6", size: 100) == .parts([0...1, 5...6]))
        #expect(ByteRange.resolve("bytes=50-60, 0-9", size: 100) == .parts([0...9, 50...60]))
        // Overlapping and adjacent ranges merge; unsatisfiable ones among others are dropped.
        #expect(ByteRange.resolve("bytes=0-10,5-20,21-30,200-300", size: 100) == .parts([0...30]))
        #expect(ByteRange.resolve("bytes=0-0,0-0,0-0", size: 100) == .parts([0...0]))
        #expect(ByteRange.resolve("bytes=,0-1,,", size: 100) == .parts([0...1]))
        #expect(ByteRange.resolve("bytes=200-300,400-", size: 100) == .unsatisfiable)
        // One bad spec invalidates the header: ignored, the whole file.
        #expect(ByteRange.resolve("bytes=0-1,oops", size: 100) == .whole)
    }

    @Test func ignoresHostileRangeLists() {
        let many = (0..<ByteRange.maxRanges + 1).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        #expect(ByteRange.resolve("bytes=" + many, size: 1000) == .whole)
        let allowed = (0..<ByteRange.maxRanges).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        guard case .parts(let parts) = ByteRange.resolve("bytes=" + allowed, size: 1000) else {
            Issue.record("expected parts")
            return
        }
        #expect(parts.count == ByteRange.maxRanges)
        #expect(ByteRange.resolve("bytes=99999999999999999999999-", size: 100) == .unsatisfiable)
    }
}
