/// The IETF resumable upload draft (draft-ietf-httpbis-resumable-upload), interop version 8, as a
/// client follows it ("optimistic upload creation", upgrading the task's own request).
extension UploadResumption {
    /// "Client implementations of draft versions of the protocol MUST send a header field
    /// `Upload-Draft-Interop-Version` with the interop version as its value to its requests", and
    /// must ignore a 104 whose version is missing or another.
    public static let ietfInteropVersion = "8"

    var ietfRequest: Request {
        let interop = ("Upload-Draft-Interop-Version", UploadResumption.ietfInteropVersion)
        guard let resource else {
            // The task's own request, offering resumption: "The client can invite the server to
            // upgrade such a request to a resumable upload by adding the `Upload-Complete: ?1`
            // header field"; `Upload-Length` since the length is known.
            return request(.create, method, url, [interop, ("Upload-Complete", "?1"), ("Upload-Length", "\(length)")], bodyFrom: 0)
        }
        if needsOffset { return request(.offset, "HEAD", resource, [interop]) }
        return request(.append, "PATCH", resource, [
            interop, ("Upload-Complete", "?1"), ("Upload-Offset", "\(offset)"), ("Content-Type", "application/partial-upload"),
        ], bodyFrom: offset)
    }

    /// `104 (Upload Resumption Supported)` with the interop version and a `Location`: the upload
    /// resource of the creation request now out.
    mutating func ietfInterim(_ reply: Reply) -> Bool {
        guard reply.status == 104, reply.fields["upload-draft-interop-version"] == UploadResumption.ietfInteropVersion,
              let location = reply.location, outstanding?.kind == .create, resource != location
        else { return false }
        resource = location
        offset = 0
        return true
    }

    /// The creation request broke off: without a 104 nothing can be resumed, and the task's retry
    /// policy decides, as for a plain upload.
    mutating func ietfCreationCut() -> Action {
        guard resource != nil else { return .report }
        needsOffset = true
        return .retryLater
    }

    /// A final response to the creation request or an append.
    mutating func ietfAnswered(_ reply: Reply, to kind: Request.Kind) -> Action {
        if kind == .append {
            // "409 (Conflict)" for a mismatching offset, with the resource's offset.
            if reply.status == 409 {
                if let right = reply.uploadOffset, right <= length {
                    offset = right
                } else {
                    needsOffset = true
                }
                return .sendNext
            }
            if UploadResumption.isGone(reply.status) { return restartFromZero() }
        }
        // A 5xx that does not say the upload is complete leaves the resource to be asked; a final
        // response with `Upload-Complete: ?1` is the upload's answer, which resuming cannot change.
        if reply.status >= 500, resource != nil, !reply.uploadComplete {
            needsOffset = true
            return .retryLater
        }
        if (200..<300).contains(reply.status) { offset = length }
        return .report
    }
}
