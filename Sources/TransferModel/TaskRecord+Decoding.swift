import Digests
import JSON
import TransferVocabulary

/// Reads a task back from its stored document and the columns of its row. Documents stored before
/// they left out defaults (the whole task object with `_internal`) read the same way: a member
/// present is taken, one absent is its default.
extension TaskRecord {
    package init?(stored value: JSONValue, columns: TaskColumns) {
        guard let request = value["request"], let url = request["url"]?.stringValue,
              let created = value["created_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        else { return nil }
        let extra = value["_internal"]
        self.init(session: columns.session, id: columns.id, sequence: columns.sequence, kind: columns.kind, url: url,
                  method: request["method"]?.stringValue ?? "GET", createdAt: created)
        state = columns.state
        phase = value["phase"]?.stringValue.flatMap(TaskPhase.init(rawValue:)) ?? TaskRecord.defaultPhase(columns.state)
        priority = value["priority"]?.numberValue ?? 0.5
        description = value["description"]?.stringValue
        headers = TaskRecord.headers(request["headers"])
        destination = value["download"]?["destination"]?.stringValue
        if case .object(let members)? = value["checksum"], let (name, hex) = members.first,
           let algorithm = DigestAlgorithm(rawValue: name), let text = hex.stringValue
        {
            checksum = Checksum(algorithm: algorithm, hex: text)
        }
        digests = DigestAlgorithm.decodeList(value["download"]?["digests"]) ?? DigestAlgorithm.defaults
        maxBytes = value["download"]?["max_bytes"]?.intValue
        beginAt = value["begin_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        // Absent: the request's url; null: none yet.
        currentURL = value["current_url"].map { $0.stringValue } ?? url
        if let r = value["response"], let status = r["status"]?.intValue {
            var head = TaskResponse(status: Int(status), headers: TaskRecord.headers(r["headers"]), mimeType: nil,
                                    expectedContentLength: nil, suggestedFilename: r["suggested_filename"]?.stringValue)
            head.mimeType = TaskResponse.stored(r["mime_type"], derived: head.derivedMimeType) { $0.stringValue }
            head.expectedContentLength = TaskResponse.stored(r["expected_content_length"], derived: head.derivedContentLength) {
                $0.intValue
            }
            response = head
        }
        // Absent, the progress is all defaults: nothing received, nothing more expected.
        do {
            let p = value["progress"] ?? .object([])
            progress.bytesReceived = p["bytes_received"]?.intValue ?? 0
            progress.bytesExpectedToReceive = p["bytes_expected_to_receive"]?.intValue ?? progress.bytesReceived
            progress.bytesSent = p["bytes_sent"]?.intValue ?? 0
            progress.bytesExpectedToSend = p["bytes_expected_to_send"]?.intValue ?? -1
            progress.bytesPerSecond = p["bytes_per_second"]?.numberValue ?? 0
        }
        if let r = value["result"], let location = r["location"]?.stringValue ?? destination,
           let size = r["size"]?.intValue ?? Optional(progress.bytesReceived)
        {
            var digests = DownloadResult.decodeDigests(r["digests"])
            if digests.isEmpty, let sha = r["sha256"]?.stringValue { digests = [(.sha256, sha)] }
            let verified = r["verified"]?.arrayValue?.compactMap(\.stringValue) ?? []
            result = DownloadResult(location: location, size: size, digests: digests, verified: verified)
        }
        if let e = value["error"], let code = e["code"]?.stringValue.flatMap(TaskErrorCode.init(rawValue:)) {
            error = TaskError(code: code, message: e["message"]?.stringValue ?? "", curlCode: e["curl_code"]?.intValue.map(Int.init),
                              resumeData: e["resume_data"]?.stringValue, status: e["status"]?.intValue.map(Int.init))
        }
        if let m = value["metrics"] {
            metrics.attempts = Int(m["attempts"]?.intValue ?? 0)
            metrics.redirectCount = Int(m["redirect_count"]?.intValue ?? 0)
            metrics.remoteAddress = m["remote_address"]?.stringValue
            metrics.httpProtocol = m["protocol"]?.stringValue
            metrics.reusedConnection = m["reused_connection"]?.boolValue ?? false
            let t = m["timings_ms"]
            metrics.dnsMs = t?["dns"]?.numberValue ?? 0
            metrics.connectMs = t?["connect"]?.numberValue ?? 0
            metrics.tlsMs = t?["tls"]?.numberValue ?? 0
            metrics.firstByteMs = t?["first_byte"]?.numberValue ?? 0
            metrics.totalMs = t?["total"]?.numberValue ?? 0
        }
        startedAt = value["started_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        completedAt = columns.completedAt
        nextAttemptAt = value["next_attempt_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        sendDigest = value["upload"]?["send_digest"]?.stringValue.flatMap(SendDigest.init(rawValue:))
        decodeUpload(value)
        if let m = value["multipart"] {
            multipart = MultipartSpec(field: m["field"]?.stringValue ?? "file", filename: m["filename"]?.stringValue,
                                      mimeType: m["mime_type"]?.stringValue ?? "application/octet-stream",
                                      fields: TaskRecord.headers(m["fields"]))
        }
        validator = TaskResponse.stored(value["_internal"]?["validator"], derived: response?.derivedValidator) { $0.stringValue }
        guard let extra else { return }
        idempotencyKey = extra["idempotency_key"]?.stringValue
        idempotencyHash = extra["idempotency_hash"]?.stringValue
        creationReply = extra["creation_reply"]?.stringValue.map { Array($0.utf8) }
        sensitiveHeaders = extra["sensitive_headers"]?.arrayValue?.compactMap(\.stringValue) ?? []
        bodyLocation = extra["body_location"]?.stringValue
        traceparent = extra["traceparent"]?.stringValue
        digestCheckpoint = DigestCheckpoint.decode(extra["digest_checkpoint"])
        if let r = extra["resume_from"], let url = r["url"]?.stringValue, let validator = r["validator"]?.stringValue,
           let offset = r["offset"]?.intValue, let partial = r["partial"]?.stringValue, let origin = r["origin"]?.stringValue
        {
            resumeFrom = ResumeData(url: url, validator: validator, offset: offset, partial: partial,
                                    destination: r["destination"]?.stringValue, origin: origin)
        }
        if let inline = extra["body_inline"]?.stringValue, let bytes = Base64.decode(inline) {
            body = .inline(bytes)
        } else if let blob = extra["body_blob"]?.stringValue {
            body = .blob(id: blob, owned: extra["body_blob_owned"]?.boolValue ?? false)
        } else if let file = extra["body_file"]?.stringValue {
            body = .file(file)
        } else if let task = extra["body_task"]?.stringValue {
            body = .task(task)
        }
    }

    private static func headers(_ value: JSONValue?) -> [Header] {
        (value?.objectValue ?? []).compactMap { name, v in v.stringValue.map { Header(name: name, value: $0) } }
    }
}
