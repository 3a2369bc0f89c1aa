import Reactor
import TransferEngine

/// Records what the engine tells it and lets a test wait for completion.
final class RecordingObserver: TransferObserver, @unchecked Sendable {
    let events = Locked<[String]>([])
    let outcome = Locked<TransferOutcome?>(nil)
    private let done = ThreadSignal()

    func transferStarted(_ handle: TransferHandle) { events.withLock { $0.append("started") } }

    func transferReceivedResponse(_ handle: TransferHandle, _ response: ResponseHead, resumedAtOffset: Int64?) {
        events.withLock { $0.append("response \(response.status)" + (resumedAtOffset.map { " at \($0)" } ?? "")) }
    }

    func transferRedirected(_ handle: TransferHandle, from: String, to: String, status: Int) {
        events.withLock { $0.append("redirect \(status)") }
    }

    func transferCompleted(_ handle: TransferHandle, _ outcome: TransferOutcome) {
        self.outcome.withLock { $0 = outcome }
        events.withLock { $0.append("completed") }
        done.post()
    }

    func wait(seconds: Double = 10) -> TransferOutcome? {
        guard done.wait(seconds: seconds) else { return nil }
        return outcome.withLock { $0 }
    }
}
