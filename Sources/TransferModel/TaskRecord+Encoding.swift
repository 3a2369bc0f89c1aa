import Digests
import JSON

extension TaskRecord {
    /// The task object of the API.
    package func encode(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id"); json.string(id)
        json.key("session"); json.string(session)
        json.key("kind"); json.string(kind.rawValue)
        json.key("state"); json.string(state.rawValue)
        json.key("phase"); json.string(phase.rawValue)
        json.key("priority"); json.double(priority)
        json.key("description"); json.optionalString(description)
        json.key("request"); json.beginObject()
        json.key("url"); json.string(url)
        json.key("method"); json.string(method)
        json.key("headers"); TaskRecord.encodeHeaders(headers, hiding: sensitiveHeaders, into: &json)
        json.key("body")
        switch body {
        case nil: json.null()
        case .inline(let bytes)?: json.beginObject(); json.key("size"); json.int(bytes.count); json.endObject()
        case .blob(let id, let owned)?:
            json.beginObject()
            if owned { json.key("size"); json.int(progress.bytesExpectedToSend) } else { json.key("blob"); json.string(id) }
            json.endObject()
        case .file(let path)?: json.beginObject(); json.key("file"); json.string(path); json.endObject()
        case .task(let id)?: json.beginObject(); json.key("task"); json.string(id); json.endObject()
        }
        json.endObject()
        if let multipart {
            json.key("multipart"); json.beginObject()
            json.key("field"); json.string(multipart.field)
            json.key("filename"); json.optionalString(multipart.filename)
            json.key("mime_type"); json.string(multipart.mimeType)
            json.key("fields"); TaskRecord.encodeHeaders(multipart.fields, into: &json)
            json.endObject()
        }
        if hasUploadMember { json.key("upload"); encodeUploadMember(into: &json) }
        if kind == .download {
            json.key("download"); json.beginObject()
            json.key("destination"); json.optionalString(destination)
            json.key("digests"); DigestAlgorithm.encodeList(digests, into: &json)
            json.key("max_bytes"); if let maxBytes { json.int(maxBytes) } else { json.null() }
            json.endObject()
        }
        if let checksum { json.key("checksum"); checksum.encode(into: &json) }
        json.key("begin_at"); json.optionalString(beginAt?.rfc3339)
        json.key("current_url"); json.optionalString(currentURL)
        json.key("response")
        if let response { response.encode(into: &json) } else { json.null() }
        json.key("progress"); encodeProgress(into: &json)
        json.key("result")
        if let result { result.encode(into: &json) } else { json.null() }
        json.key("error")
        if let error {
            json.beginObject()
            json.key("code"); json.string(error.code.rawValue)
            json.key("message"); json.string(error.message)
            json.key("curl_code"); if let c = error.curlCode { json.int(c) } else { json.null() }
            json.key("resume_data"); json.optionalString(error.resumeData)
            // Only `http_error` has one; left out otherwise, as before it existed.
            if let status = error.status { json.key("status"); json.int(status) }
            json.endObject()
        } else {
            json.null()
        }
        json.key("metrics"); encode(metrics, into: &json)
        json.key("created_at"); json.string(createdAt.rfc3339)
        json.key("started_at"); json.optionalString(startedAt?.rfc3339)
        json.key("completed_at"); json.optionalString(completedAt?.rfc3339)
        json.key("next_attempt_at"); json.optionalString(nextAttemptAt?.rfc3339)
        json.endObject()
    }

    /// With `hiding` (a session's listed sensitive headers), the values of `SensitiveHeaders` read
    /// `<redacted>`: request headers as the API shows them. Without, every value as it is.
    static func encodeHeaders(_ headers: [Header], hiding listed: [String]? = nil, into json: inout JSONWriter) {
        // Repeated fields are combined as RFC 9110 §5.3 allows; the object keeps first-seen order.
        json.beginObject()
        if headers.count <= 32 {
            // A usual head: comparing a few dozen names costs less than hashing them into a
            // dictionary, which cost most of a task reply's encoding. Past that (an origin may send
            // thousands of fields within curl's limit on a head) the pairwise scan would not be
            // bounded, and the names are grouped by hash.
            for (i, field) in headers.enumerated() where !headers[..<i].contains(where: { $0.name == field.name }) {
                encodeField(field.name, headers[i...].filter { $0.name == field.name }, hiding: listed, into: &json)
            }
        } else {
            var order: [String] = []
            var fields: [String: [Header]] = [:]
            for h in headers {
                if fields[h.name] == nil { order.append(h.name) }
                fields[h.name, default: []].append(h)
            }
            for name in order { encodeField(name, fields[name]!, hiding: listed, into: &json) }
        }
        json.endObject()
    }

    /// One member of a headers object: the values of `fields` (all named `name`), joined.
    private static func encodeField(_ name: String, _ fields: [Header], hiding listed: [String]?, into json: inout JSONWriter) {
        func shown(_ h: Header) -> String {
            listed.map { SensitiveHeaders.hides(h.name, listed: $0) } == true ? SessionConfiguration.redacted : h.value
        }
        json.key(escaping: name)
        json.string(fields.count == 1 ? shown(fields[0]) : fields.map(shown).joined(separator: ", "))
    }

    /// The `progress` member, also the data of `task.progress`.
    package func encodeProgress(into json: inout JSONWriter) {
        json.beginObject()
        json.key("bytes_received"); json.int(progress.bytesReceived)
        json.key("bytes_expected_to_receive"); json.int(progress.bytesExpectedToReceive)
        json.key("bytes_sent"); json.int(progress.bytesSent)
        json.key("bytes_expected_to_send"); json.int(progress.bytesExpectedToSend)
        json.key("fraction"); if let f = progress.fraction { json.double(f) } else { json.null() }
        json.key("bytes_per_second"); json.double(progress.bytesPerSecond.rounded())
        json.endObject()
    }

    private func encode(_ metrics: TaskMetrics, into json: inout JSONWriter) {
        json.beginObject()
        json.key("attempts"); json.int(metrics.attempts)
        json.key("redirect_count"); json.int(metrics.redirectCount)
        json.key("remote_address"); json.optionalString(metrics.remoteAddress)
        json.key("protocol"); json.optionalString(metrics.httpProtocol)
        json.key("reused_connection"); json.bool(metrics.reusedConnection)
        json.key("timings_ms"); json.beginObject()
        json.key("dns"); json.double(metrics.dnsMs)
        json.key("connect"); json.double(metrics.connectMs)
        json.key("tls"); json.double(metrics.tlsMs)
        json.key("first_byte"); json.double(metrics.firstByteMs)
        json.key("total"); json.double(metrics.totalMs)
        json.endObject()
        json.endObject()
    }

    package func jsonBytes() -> [UInt8] {
        var json = JSONWriter(capacity: 1024)
        encode(into: &json)
        return json.bytes
    }
}

extension TaskResponse {
    package func jsonBytes() -> [UInt8] {
        var json = JSONWriter()
        encode(into: &json)
        return json.bytes
    }

    /// The `response` member of a task, also the data of `task.response_received`.
    func encode(into json: inout JSONWriter) {
        json.beginObject()
        json.key("status"); json.int(status)
        json.key("headers"); TaskRecord.encodeHeaders(headers, into: &json)
        json.key("mime_type"); json.optionalString(mimeType)
        json.key("expected_content_length"); if let n = expectedContentLength { json.int(n) } else { json.null() }
        json.key("suggested_filename"); json.optionalString(suggestedFilename)
        json.endObject()
    }
}

extension DownloadResult {
    /// The `result` member of a task, also the data of `task.finished_downloading`.
    package func jsonBytes() -> [UInt8] {
        var json = JSONWriter(capacity: 160)
        encode(into: &json)
        return json.bytes
    }

    func encode(into json: inout JSONWriter) {
        json.beginObject()
        json.key("location"); json.string(location)
        json.key("size"); json.int(size)
        if let sha256 { json.key("sha256"); json.string(sha256) }
        json.key("digests"); encodeDigests(into: &json)
        json.key("verified"); encodeVerified(into: &json)
        json.endObject()
    }

    func encodeVerified(into json: inout JSONWriter) {
        json.beginArray()
        for source in verified { json.string(source) }
        json.endArray()
    }
}
