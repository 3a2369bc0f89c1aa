import TransferEngine

/// Hands a delivery's outcome on; the rest of the news is of no interest.
final class DeliveryObserver: TransferObserver, Sendable {
    private let completion: @Sendable (TransferOutcome) -> Void

    init(completion: @escaping @Sendable (TransferOutcome) -> Void) {
        self.completion = completion
    }

    func transferStarted(_ handle: TransferHandle) {}
    func transferReceivedResponse(_ handle: TransferHandle, _ response: ResponseHead, resumedAtOffset: Int64?) {}
    func transferRedirected(_ handle: TransferHandle, from: String, to: String, status: Int) {}
    func transferCompleted(_ handle: TransferHandle, _ outcome: TransferOutcome) { completion(outcome) }
}
