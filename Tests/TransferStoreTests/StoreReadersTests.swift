import Dispatch
import Glibc
import Reactor
import Testing
@testable import TransferStore

/// Reads that wait (a database holding a lock) take at most the readers' width of threads; the
/// rest queue, and run as slots free up.
struct StoreReadersTests {
    @Test func readsBeyondTheWidthQueueUntilASlotFrees() throws {
        let readers = StoreReaders(width: 2)
        let release = DispatchSemaphore(value: 0)
        let state = Locked<(running: Int, most: Int, started: [Int])>((0, 0, []))
        let done = DispatchGroup()
        for i in 0..<6 {
            done.enter()
            readers.submit {
                state.withLock { s in
                    s.running += 1
                    s.most = max(s.most, s.running)
                    s.started.append(i)
                }
                release.wait()
                state.withLock { $0.running -= 1 }
                done.leave()
            }
        }
        // Two reads hold both slots; the other four wait in the queue, not on threads.
        let deadline = DispatchTime.now() + 5
        while state.withLock({ $0.running }) < 2, DispatchTime.now() < deadline { usleep(1000) }
        usleep(50_000)
        #expect(state.withLock { $0.running } == 2)
        for _ in 0..<6 { release.signal() }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(state.withLock { $0.most } == 2)
        let started = state.withLock { $0.started }
        #expect(Set(started.prefix(2)) == [0, 1] && Set(started) == Set(0..<6))
    }
}
