import Testing
@testable import TransferAPI

struct ByteRangeTests {
    @Test func resolvesSingleRanges() {
        #expect(ByteRange.resolve(nil, size: 100) == .whole)
        #expect(ByteRange.resolve("bytes=0-9", size: 100) == .part(start: 0, end: 9))
        #expect(ByteRange.resolve("bytes=90-", size: 100) == .part(start: 90, end: 99))
        #expect(ByteRange.resolve("bytes=-10", size: 100) == .part(start: 90, end: 99))
        #expect(ByteRange.resolve("bytes=50-500", size: 100) == .part(start: 50, end: 99))
        #expect(ByteRange.resolve("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=0-1,5-6", size: 100) == .whole)
        #expect(ByteRange.resolve("items=0-1", size: 100) == .whole)
        #expect(ByteRange.resolve("bytes=9-1", size: 100) == .whole)
    }
}
