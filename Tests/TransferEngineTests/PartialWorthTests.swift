import Testing
import TransferEngine

/// When a partial file is worth a name: a second of running or a MiB on disk, whichever first, or
/// a response that announces more than a MiB (or does not say).
struct PartialWorthTests {
    let second: UInt64 = 1_000_000_000

    @Test func anEmptyFileIsNeverWorthANameHoweverLongItWaited() {
        #expect(!PartialWorth.isWorthKeeping(written: 0, running: 3600 * second))
    }

    @Test func aFewBytesBecomeWorthANameAfterASecond() {
        #expect(!PartialWorth.isWorthKeeping(written: 1, running: second - 1))
        #expect(PartialWorth.isWorthKeeping(written: 1, running: second))
    }

    @Test func aMiBOnDiskIsWorthANameAtOnce() {
        #expect(!PartialWorth.isWorthKeeping(written: (1 << 20) - 1, running: 0))
        #expect(PartialWorth.isWorthKeeping(written: 1 << 20, running: 0))
    }

    @Test func aResponseAnnouncingMoreThanAMiBOrNotSayingIsWorthANameAtItsHead() {
        #expect(PartialWorth.isWorthKeeping(written: 0, running: 0, announced: (1 << 20) + 1))
        #expect(PartialWorth.isWorthKeeping(written: 0, running: 0, announced: .max))
        #expect(!PartialWorth.isWorthKeeping(written: 0, running: 0, announced: 1 << 20))
    }
}
