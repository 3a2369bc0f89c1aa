import Digests
import Synchronization

/// Where a transfer is in its life, as the task's `phase` names it (the engine's part:
/// `scheduled` — not before `begin_at` — and `retrying` belong to the caller, which hands a
/// transfer over only when it may start).
public enum TransferPhase: Int, Sendable {
    case waiting = 0, connecting, transferring, finished

    public var name: String {
        switch self {
        case .waiting: "waiting"
        case .connecting: "connecting"
        case .transferring: "transferring"
        case .finished: "finished"
        }
    }
}

/// A submitted transfer as other threads see it: live counters (written by the loop thread,
/// read by anyone without locks) and the way to stop it.
public final class TransferHandle: Sendable {
    public let spec: TransferSpec
    let loop: MultiLoop
    private let received = Atomic<Int64>(0)
    private let expected = Atomic<Int64>(-1)
    private let sent = Atomic<Int64>(0)
    private let expectedToSend = Atomic<Int64>(-1)
    private let phaseValue = Atomic<Int>(TransferPhase.waiting.rawValue)
    private let fenced = Atomic<Bool>(false)

    init(spec: TransferSpec, loop: MultiLoop) {
        self.spec = spec
        self.loop = loop
    }

    /// Body bytes the output holds (a resumed prefix included).
    public var bytesReceived: Int64 { received.load(ordering: .relaxed) }
    /// Expected total, or -1 when the origin did not say.
    public var bytesExpectedToReceive: Int64 { expected.load(ordering: .relaxed) }
    public var bytesSent: Int64 { sent.load(ordering: .relaxed) }
    public var bytesExpectedToSend: Int64 { expectedToSend.load(ordering: .relaxed) }
    public var phase: TransferPhase { TransferPhase(rawValue: phaseValue.load(ordering: .relaxed)) ?? .waiting }

    /// Stops the transfer; its observer then gets an outcome with this `stopReason`. Partial
    /// output stays where it is, for the caller to keep or remove. `.fenced` takes effect at once:
    /// from this call on, the transfer writes nothing more, even before its loop gets to stop it.
    public func stop(_ reason: StopReason) {
        if reason == .fenced { fenced.store(true, ordering: .releasing) }
        loop.stop(self, reason: reason)
    }

    /// Stopped with `.fenced`: its writes are refused.
    var isFenced: Bool { fenced.load(ordering: .acquiring) }

    func setReceived(_ value: Int64) { received.store(value, ordering: .relaxed) }
    func setExpected(_ value: Int64) { expected.store(value, ordering: .relaxed) }
    func setSent(_ value: Int64) { sent.store(value, ordering: .relaxed) }
    func setExpectedToSend(_ value: Int64) { expectedToSend.store(value, ordering: .relaxed) }
    func setPhase(_ phase: TransferPhase) { phaseValue.store(phase.rawValue, ordering: .relaxed) }
}

/// Told, on the transfer's loop thread (a completion possibly on a pool thread), what happens to a
/// transfer. Calls must be quick: slow work (fsync, SQLite) belongs on another thread.
public protocol TransferObserver: AnyObject, Sendable {
    /// Admitted: connecting now.
    func transferStarted(_ handle: TransferHandle)
    /// The head of the final response arrived (redirects already followed).
    func transferReceivedResponse(_ handle: TransferHandle, _ response: ResponseHead, resumedAtOffset: Int64?)
    /// An interim `104 (Upload Resumption Supported)` response arrived (the resumable upload
    /// draft names its upload resource in one). Called on the loop; quick.
    func transferReceivedUploadResumption(_ handle: TransferHandle, _ response: ResponseHead)
    /// A redirect is being followed.
    func transferRedirected(_ handle: TransferHandle, from: String, to: String, status: Int)
    /// The attempt ended. Called on the loop, or on a pool thread when the output was hashed:
    /// an observer hands it to its own executor and must not call back into the engine's loop state.
    func transferCompleted(_ handle: TransferHandle, _ outcome: TransferOutcome)
    /// The output's digests stood so after its first `checkpoint.offset` bytes (`spec.checkpointDigests`).
    /// Called on a pool thread, every `FileHasher.checkpointStep` bytes hashed; must not block.
    func transferCheckpointedDigests(_ handle: TransferHandle, _ checkpoint: DigestCheckpoint)
    /// The output file has run long enough or holds enough to be kept across a crash
    /// (`spec.reportsPartialWorth`, `PartialWorth`). Called once per attempt, on the loop; quick.
    func transferPartialWorthKeeping(_ handle: TransferHandle)
}

extension TransferObserver {
    public func transferReceivedUploadResumption(_ handle: TransferHandle, _ response: ResponseHead) {}
    public func transferCheckpointedDigests(_ handle: TransferHandle, _ checkpoint: DigestCheckpoint) {}
    public func transferPartialWorthKeeping(_ handle: TransferHandle) {}
}
