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

    /// A redirect curl was not left to follow (`Transfer.restartsForCredential`): the same easy
    /// handle starts again at its target. curl_easy_reset(3) keeps the handle's cookies, so those
    /// set along the redirects so far go on with it, as they would in curl's own follow; it loses
    /// track of the handle's list of cookie files (64 bytes, see `EasyHandlePool`), a price paid
    /// at most once per redirect the task may follow.
    func restart(_ transfer: Transfer, at redirect: CredentialRedirect) {
        guard let easy = transfer.easy else { return }
        curl_multi_remove_handle(UnsafeMutableRawPointer(multi), UnsafeMutableRawPointer(easy))
        if let list = transfer.headerList { curl_slist_free_all(list) }
        transfer.headerList = nil
        curl_easy_reset(UnsafeMutableRawPointer(easy))
        transfer.beginRedirect(redirect)
        guard let errorBuffer = errorBuffers[ObjectIdentifier(transfer)] else { return }
        _ = attach(transfer, easy, errorBuffer: errorBuffer)
    }
}
