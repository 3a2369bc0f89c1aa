/// tus 1.0.0 (the core protocol and its creation extension) as a client follows it: `POST` with
/// `Upload-Length` creates the upload resource, `HEAD` reads its `Upload-Offset`, `PATCH` with
/// `application/offset+octet-stream` appends at it; every request but `OPTIONS` carries
/// `Tus-Resumable: 1.0.0`.
extension UploadResumption {
    public static let tusVersion = "1.0.0"

    var tusRequest: Request {
        let tus = ("Tus-Resumable", UploadResumption.tusVersion)
        guard let resource else {
            // Creation extension: "The Client MUST send a POST request against a known upload
            // creation URL … The request MUST include … the Upload-Length header".
            return request(.create, "POST", url, [tus, ("Upload-Length", "\(length)")])
        }
        if needsOffset { return request(.offset, "HEAD", resource, [tus]) }
        return request(.append, "PATCH", resource, [
            tus, ("Upload-Offset", "\(offset)"), ("Content-Type", "application/offset+octet-stream"),
        ], bodyFrom: offset)
    }

    /// "The Server MUST respond with the 201 Created status … and the Location header".
    mutating func tusCreated(_ reply: Reply) -> Action {
        guard reply.status == 201, let location = reply.location else { return .report }
        resource = location
        offset = 0
        needsOffset = false
        return .sendNext
    }

    mutating func tusAppended(_ reply: Reply) -> Action {
        if (200..<300).contains(reply.status) {
            // "The Server MUST acknowledge successful PATCH requests with the 204 No Content
            // status. It MUST include the Upload-Offset header containing the new offset."
            guard let reported = reply.uploadOffset, reported <= length else {
                return .fail("the upload resource answered HTTP \(reply.status) to an append without a usable Upload-Offset")
            }
            offset = reported
            return offset == length ? .report : .sendNext
        }
        if UploadResumption.isGone(reply.status) { return restartFromZero() }
        // 409: "the Upload-Offset header's value does not match the offset of the resource";
        // 460: the checksum extension's mismatch, the bytes dropped. Either way, ask again.
        if reply.status == 409 || reply.status == 460 || reply.status >= 500 {
            needsOffset = true
            return reply.status >= 500 ? .retryLater : .sendNext
        }
        return .report
    }
}
