import CCurl

extension MultiLoop {
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
