import Digests
import JSON

/// What a stored task keeps in the columns of its row, beside its document: the document leaves
/// these out and reading puts them back.
package struct TaskColumns: Sendable {
    package let session: String
    package let id: String
    package let sequence: Int64
    package let kind: TaskKind
    package let state: TaskState
    package let completedAt: Timestamp?

    package init(session: String, id: String, sequence: Int64, kind: TaskKind, state: TaskState, completedAt: Timestamp?) {
        self.session = session
        self.id = id
        self.sequence = sequence
        self.kind = kind
        self.state = state
        self.completedAt = completedAt
    }
}

extension TaskRecord {
    /// The stored document: the task object's members without what the row's columns hold, what
    /// is derived (`fraction`, `request.body`) and what equals its default (null, zero, empty, or
    /// what a completed download mostly has: `current_url` the request's url, `result.location`
    /// the destination, `result.size` and `progress.bytes_expected_to_receive` the bytes received,
    /// the response's `mime_type` and `expected_content_length` its Content-Type and
    /// Content-Length, the validator its ETag), so a completed small download stores what is
    /// particular to it. Reading
    /// (`init(stored:columns:)`) gives back the same record, whose API encoding is byte for byte
    /// the one before storing: `task.completed` events are rebuilt from it.
    package func storageDocument() -> [UInt8] {
        var json = JSONWriter(capacity: 768)
        json.beginObject()
        if phase != TaskRecord.defaultPhase(state) { json.key("phase"); json.string(phase.rawValue) }
        if priority != 0.5 { json.key("priority"); json.double(priority) }
        if let description { json.key("description"); json.string(description) }
        json.key("request"); json.beginObject()
        json.key("url"); json.string(url)
        if method != "GET" { json.key("method"); json.string(method) }
        if !headers.isEmpty { json.key("headers"); TaskRecord.encodeHeaders(headers, into: &json) }
        json.endObject()
        if let multipart {
            json.key("multipart"); json.beginObject()
            json.key("field"); json.string(multipart.field)
            if let filename = multipart.filename { json.key("filename"); json.string(filename) }
            json.key("mime_type"); json.string(multipart.mimeType)
            if !multipart.fields.isEmpty { json.key("fields"); TaskRecord.encodeHeaders(multipart.fields, into: &json) }
            json.endObject()
        }
        if hasUploadMember { json.key("upload"); encodeUploadMember(into: &json) }
        // `digests` only when not the default, which most downloads keep.
        if destination != nil || digests != DigestAlgorithm.defaults || maxBytes != nil {
            json.key("download"); json.beginObject()
            if let destination { json.key("destination"); json.string(destination) }
            if digests != DigestAlgorithm.defaults { json.key("digests"); DigestAlgorithm.encodeList(digests, into: &json) }
            if let maxBytes { json.key("max_bytes"); json.int(maxBytes) }
            json.endObject()
        }
        if let checksum { json.key("checksum"); checksum.encode(into: &json) }
        if let beginAt { json.key("begin_at"); json.string(beginAt.rfc3339) }
        // Absent: the request's url (every task that got a response); null: none yet.
        if currentURL != url { json.key("current_url"); json.optionalString(currentURL) }
        if let response { json.key("response"); response.encodeStored(into: &json) }
        encodeStoredProgress(into: &json)
        if let result {
            json.key("result"); json.beginObject()
            if result.location != destination { json.key("location"); json.string(result.location) }
            if result.size != progress.bytesReceived { json.key("size"); json.int(result.size) }
            // A lone sha256 (the default) as the one member it always was.
            if result.digests.count == 1, let sha256 = result.sha256 {
                json.key("sha256"); json.string(sha256)
            } else {
                json.key("digests"); result.encodeDigests(into: &json)
            }
            if !result.verified.isEmpty { json.key("verified"); result.encodeVerified(into: &json) }
            json.endObject()
        }
        if let error {
            json.key("error"); json.beginObject()
            json.key("code"); json.string(error.code.rawValue)
            json.key("message"); json.string(error.message)
            if let c = error.curlCode { json.key("curl_code"); json.int(c) }
            if let r = error.resumeData { json.key("resume_data"); json.string(r) }
            if let status = error.status { json.key("status"); json.int(status) }
            json.endObject()
        }
        encodeStoredMetrics(into: &json)
        json.key("created_at"); json.string(createdAt.rfc3339)
        if let startedAt { json.key("started_at"); json.string(startedAt.rfc3339) }
        if let nextAttemptAt { json.key("next_attempt_at"); json.string(nextAttemptAt.rfc3339) }
        encodeStoredInternal(into: &json)
        encodeUploadState(into: &json)
        json.endObject()
        return json.bytes
    }

    /// The phase a stored document leaves out: the one a task in `state` mostly has.
    static func defaultPhase(_ state: TaskState) -> TaskPhase { state == .completed ? .finished : .waiting }

    private func encodeStoredProgress(into json: inout JSONWriter) {
        let p = progress
        // The API shows the rate rounded; stored rounded, it reads back as the API showed it.
        let rate = p.bytesPerSecond.rounded()
        // Absent, the expected bytes are the bytes received (a finished download's); -1 is written.
        guard p.bytesReceived != 0 || p.bytesExpectedToReceive != 0 || p.bytesSent != 0 || p.bytesExpectedToSend != -1
                || rate != 0 else { return }
        json.key("progress"); json.beginObject()
        if p.bytesReceived != 0 { json.key("bytes_received"); json.int(p.bytesReceived) }
        if p.bytesExpectedToReceive != p.bytesReceived { json.key("bytes_expected_to_receive"); json.int(p.bytesExpectedToReceive) }
        if p.bytesSent != 0 { json.key("bytes_sent"); json.int(p.bytesSent) }
        if p.bytesExpectedToSend != -1 { json.key("bytes_expected_to_send"); json.int(p.bytesExpectedToSend) }
        if rate != 0 { json.key("bytes_per_second"); json.double(rate) }
        json.endObject()
    }

    private func encodeStoredMetrics(into json: inout JSONWriter) {
        let m = metrics
        let timings: [(StaticString, Double)] = [("dns", m.dnsMs), ("connect", m.connectMs), ("tls", m.tlsMs), ("first_byte", m.firstByteMs), ("total", m.totalMs)]
        let anyTiming = timings.contains { $0.1 != 0 }
        guard m.attempts != 0 || m.redirectCount != 0 || m.remoteAddress != nil || m.httpProtocol != nil || m.reusedConnection
                || anyTiming else { return }
        json.key("metrics"); json.beginObject()
        if m.attempts != 0 { json.key("attempts"); json.int(m.attempts) }
        if m.redirectCount != 0 { json.key("redirect_count"); json.int(m.redirectCount) }
        if let a = m.remoteAddress { json.key("remote_address"); json.string(a) }
        if let p = m.httpProtocol { json.key("protocol"); json.string(p) }
        if m.reusedConnection { json.key("reused_connection"); json.bool(true) }
        if anyTiming {
            json.key("timings_ms"); json.beginObject()
            for (name, value) in timings where value != 0 { json.key(name); json.double(value) }
            json.endObject()
        }
        json.endObject()
    }

    /// transferd's own fields, those set.
    private func encodeStoredInternal(into json: inout JSONWriter) {
        let etag = response?.derivedValidator
        guard idempotencyKey != nil || idempotencyHash != nil || creationReply != nil || !sensitiveHeaders.isEmpty
                || validator != etag || bodyLocation != nil || resumeFrom != nil || body != nil || digestCheckpoint != nil
                || traceparent != nil else { return }
        json.key("_internal"); json.beginObject()
        if let idempotencyKey { json.key("idempotency_key"); json.string(idempotencyKey) }
        if let idempotencyHash { json.key("idempotency_hash"); json.string(idempotencyHash) }
        if let creationReply { json.key("creation_reply"); json.string(String(decoding: creationReply, as: UTF8.self)) }
        if !sensitiveHeaders.isEmpty {
            json.key("sensitive_headers"); json.beginArray(); sensitiveHeaders.forEach { json.string($0) }; json.endArray()
        }
        TaskResponse.encodeStored("validator", validator, derived: etag, into: &json) { $0.string($1) }
        if let bodyLocation { json.key("body_location"); json.string(bodyLocation) }
        if let traceparent { json.key("traceparent"); json.string(traceparent) }
        if let digestCheckpoint { json.key("digest_checkpoint"); digestCheckpoint.encode(into: &json) }
        if let resumeFrom {
            json.key("resume_from"); json.beginObject()
            json.key("url"); json.string(resumeFrom.url)
            json.key("validator"); json.string(resumeFrom.validator)
            json.key("offset"); json.int(resumeFrom.offset)
            json.key("partial"); json.string(resumeFrom.partial)
            json.key("destination"); json.optionalString(resumeFrom.destination)
            json.key("origin"); json.string(resumeFrom.origin)
            json.endObject()
        }
        switch body {
        case .inline(let bytes)?: json.key("body_inline"); json.string(Base64.encode(bytes))
        case .blob(let id, let owned)?: json.key("body_blob"); json.string(id); json.key("body_blob_owned"); json.bool(owned)
        case .file(let path)?: json.key("body_file"); json.string(path)
        case .task(let id)?: json.key("body_task"); json.string(id)
        case nil: break
        }
        json.endObject()
    }
}

extension TaskResponse {
    /// The `response` member without its nulls.
    func encodeStored(into json: inout JSONWriter) {
        json.beginObject()
        json.key("status"); json.int(status)
        if !headers.isEmpty { json.key("headers"); TaskRecord.encodeHeaders(headers, into: &json) }
        TaskResponse.encodeStored("mime_type", mimeType, derived: derivedMimeType, into: &json) { $0.string($1) }
        TaskResponse.encodeStored("expected_content_length", expectedContentLength, derived: derivedContentLength, into: &json) {
            $0.int($1)
        }
        if let suggestedFilename { json.key("suggested_filename"); json.string(suggestedFilename) }
        json.endObject()
    }
}

extension TaskResponse {
    /// A member that a header gives most of the time: left out when it is what the header gives,
    /// null when it is nil though a header would give something.
    static func encodeStored<T: Equatable>(_ name: StaticString, _ value: T?, derived: T?, into json: inout JSONWriter,
                                                   _ write: (inout JSONWriter, T) -> Void)
    {
        if value == derived && value != nil { return }
        guard let value else {
            if derived != nil { json.key(name); json.null() }
            return
        }
        json.key(name)
        write(&json, value)
    }

    /// What a stored member reads as: absent, what the header gives.
    static func stored<T>(_ member: JSONValue?, derived: T?, _ read: (JSONValue) -> T?) -> T? {
        guard let member else { return derived }
        return read(member)
    }

    var derivedMimeType: String? { onlyHeader("content-type") }

    /// What a task's validator mostly is: the response's ETag.
    var derivedValidator: String? { onlyHeader("etag") }

    var derivedContentLength: Int64? {
        guard let text = onlyHeader("content-length"), let n = Int64(text), String(n) == text else { return nil }
        return n
    }

    /// The value of the one header of this name (two, or none, give nothing — alike before and
    /// after storing, since stored headers keep their names).
    private func onlyHeader(_ lowercased: String) -> String? {
        var found: String?
        for h in headers where h.name.lowercased() == lowercased {
            if found != nil { return nil }
            found = h.value
        }
        return found
    }
}
