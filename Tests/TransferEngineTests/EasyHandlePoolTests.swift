import CCurl
import CLinux
import Testing
@testable import TransferEngine

/// A pooled handle costs nothing per transfer it ran: the pool's reset leaves no allocation behind.
struct EasyHandlePoolTests {
    /// Each use of the cookie engine adds "" to the handle's list of cookie files, as
    /// `EasyConfigurator` does; the reset alone would lose that entry without freeing it, 64 bytes
    /// a transfer. Other tests allocate on their own threads meanwhile, so the least growth over a
    /// few rounds is what counts: a leak shows in every round, noise not. The bar is half of what
    /// the leak adds a round (128,000 bytes): one quiet-enough round in eight passes, a leak never
    /// (a CI run saw 33,648 bytes of other tests' noise in the quietest of five rounds).
    @Test func reusingACookieHandleLeavesNothingAllocated() {
        var pool = EasyHandlePool()
        defer { pool.removeAll() }
        let uses = 2_000
        var growth: [Int] = []
        for _ in 0..<8 {
            let before = Int(mallinfo2().uordblks)
            for _ in 0..<uses {
                let easy = pool.take(cookieEngine: true)
                _ = transferd_easy_setopt_string(UnsafeMutableRawPointer(easy), CURLOPT_COOKIEFILE, "")
                pool.give(easy, cookieEngine: true)
            }
            growth.append(Int(mallinfo2().uordblks) - before)
        }
        #expect(growth.min()! < uses * 64 / 2, "bytes still allocated after \(uses) uses, by round: \(growth)")
    }
}
