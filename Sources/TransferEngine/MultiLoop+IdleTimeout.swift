import CCurl
import Reactor

/// The idle timeout of running transfers (`TransferSpec.idleTimeout`), on the loop's thread.
extension MultiLoop {
    /// Four times a second: a running transfer that moved no byte for its idle timeout ends with
    /// `timedOut`. Checked here rather than in a curl callback: curl calls none while a socket is
    /// silent and no timer of its own is due. The same pass tells which outputs became worth a
    /// name for a restart (`PartialWorth`), a quarter second at most after they did.
    func scheduleIdleSweep() {
        loop.scheduleTimer(at: MonotonicClock.after(seconds: 0.25)) { [weak self] in
            guard let self else { return }
            self.sweepIdle()
            self.scheduleIdleSweep()
        }
    }

    private func sweepIdle() {
        let now = MonotonicClock.now()
        let running = sessions.values.flatMap(\.runningList)
        for transfer in running { transfer.reportPartialWorthIfDue(now: now) }
        let idle = running.filter {
            $0.lifecycle.countsIdleTime && Double(now &- $0.lastActivity) / 1e9 >= $0.spec.idleTimeout
        }
        // One finished before may have ended another on its way (an observer stopping it).
        for transfer in idle where transfer.lifecycle.countsIdleTime {
            tell(transfer, .idleTimeout, code: CURLE_OPERATION_TIMEDOUT, detail: "no data moved for \(transfer.spec.idleTimeout) seconds")
        }
    }
}
