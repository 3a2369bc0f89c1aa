import Testing
@testable import JSON
@testable import TransferCore
@testable import TransferModel

struct RandomIDTests {
    @Test func idsAreTwentyBase36CharactersThatSortByTime() {
        let times: [Int64] = [0, 1, 35, 36, 1_795_000_000_000, 1_795_000_000_001, 1_795_000_086_400, 99_999_999_999_999]
        let ids = times.map { RandomID.make(at: Timestamp(milliseconds: $0)) }
        for id in ids {
            #expect(id.utf8.count == 20)
            let base36 = id.utf8.allSatisfy { (c: UInt8) -> Bool in (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7A) }
            #expect(base36)
        }
        #expect(ids == ids.sorted())
    }

    @Test func idsOfOneMillisecondDiffer() {
        let now = Timestamp.now()
        let ids = (0..<10_000).map { _ in RandomID.make(at: now) }
        #expect(Set(ids).count == ids.count)
        #expect(Set(ids.map { $0.prefix(9) }).count == 1)
    }
}
