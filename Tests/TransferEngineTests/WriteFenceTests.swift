import Testing
@testable import TransferEngine

/// The write fence as a value judged against given moments (no clock read): closed until a lease
/// is proved, open strictly before the deadline the last renewal allowed, closed from it on.
@Suite struct WriteFenceTests {
    static let second: UInt64 = 1_000_000_000

    @Test func nothingIsWrittenBeforeTheFirstRenewal() {
        let fence = WriteFence()
        #expect(!fence.permits(at: 0))
        #expect(!fence.permits(at: 1000 * Self.second))
    }

    @Test func writesGoOnUntilTheDeadlineAndNotAtIt() {
        let fence = WriteFence()
        fence.allow(until: 112)
        #expect(fence.permits(at: 100 * Self.second))
        #expect(fence.permits(at: 112 * Self.second - 1))
        #expect(!fence.permits(at: 112 * Self.second))
    }

    /// A process frozen past its deadline wakes up with its fence as it left it: the first write
    /// it tries is judged at the moment it tries it.
    @Test func aRenewalMovesTheDeadlineAndAFrozenProcessWakesPastIt() {
        let fence = WriteFence()
        fence.allow(until: 112)
        fence.allow(until: 113.5)
        #expect(fence.permits(at: 113 * Self.second))
        #expect(!fence.permits(at: 140 * Self.second))
    }
}
