import CCurl

/// Where the loop tells a transfer's lifecycle what happened and performs what it answers
/// (`TransferLifecycle`): the one place its state changes outside curl's callbacks.
extension MultiLoop {
    /// `code` and `detail`: what the outcome reports of curl if the event finishes the attempt.
    func tell(_ transfer: Transfer, _ event: TransferLifecycle.Event,
              code: CURLcode = CURLE_ABORTED_BY_CALLBACK, detail: String = "stopped") {
        guard case .perform(let actions) = transfer.lifecycle.handle(event) else {
            assertionFailure("transfer \(transfer.spec.url): \(event) cannot happen in \(transfer.lifecycle.current)")
            return
        }
        for action in actions {
            switch action {
            case .prepareFiles: prepareFiles(transfer)
            case .launch: launch(transfer)
            case .restart(let redirect): restart(transfer, at: redirect)
            case .unpause: transfer.unpause()
            case .leavePacer: pacer.forget(transfer)
            case .finish: finish(transfer, code: code, detail: detail)
            case .refuse: refuse(transfer)
            case .withdraw: withdraw(transfer)
            }
        }
    }

    /// curl is done with the transfer's handle, or refused it.
    func handleDone(_ transfer: Transfer, code: CURLcode, detail: String) {
        tell(transfer, .handleDone(writeRefused: code == CURLE_WRITE_ERROR), code: code, detail: detail)
    }
}
