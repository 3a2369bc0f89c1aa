import JSON

/// Reads a task back from its stored document (the API object plus `_internal`).
extension TaskRecord {
    package init?(stored value: JSONValue) {
        guard let session = value["session"]?.stringValue, let id = value["id"]?.stringValue,
              let kind = value["kind"]?.stringValue.flatMap(TaskKind.init(rawValue:)),
              let request = value["request"], let url = request["url"]?.stringValue,
              let method = request["method"]?.stringValue,
              let created = value["created_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
              let extra = value["_internal"], let sequence = extra["sequence"]?.intValue
        else { return nil }
        self.init(session: session, id: id, sequence: sequence, kind: kind, url: url, method: method, createdAt: created)
        state = value["state"]?.stringValue.flatMap(TaskState.init(rawValue:)) ?? .suspended
        phase = value["phase"]?.stringValue.flatMap(TaskPhase.init(rawValue:)) ?? .waiting
        priority = value["priority"]?.numberValue ?? 0.5
        description = value["description"]?.stringValue
        headers = TaskRecord.headers(request["headers"])
        destination = value["download"]?["destination"]?.stringValue
        checksumSHA256 = value["checksum"]?["sha256"]?.stringValue
        beginAt = value["begin_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        currentURL = value["current_url"]?.stringValue
        if let r = value["response"], let status = r["status"]?.intValue {
            response = TaskResponse(status: Int(status), headers: TaskRecord.headers(r["headers"]),
                                    mimeType: r["mime_type"]?.stringValue,
                                    expectedContentLength: r["expected_content_length"]?.intValue,
                                    suggestedFilename: r["suggested_filename"]?.stringValue)
        }
        if let p = value["progress"] {
            progress.bytesReceived = p["bytes_received"]?.intValue ?? 0
            progress.bytesExpectedToReceive = p["bytes_expected_to_receive"]?.intValue ?? -1
            progress.bytesSent = p["bytes_sent"]?.intValue ?? 0
            progress.bytesExpectedToSend = p["bytes_expected_to_send"]?.intValue ?? -1
        }
        if let r = value["result"], let location = r["location"]?.stringValue, let size = r["size"]?.intValue,
           let sha = r["sha256"]?.stringValue
        {
            result = DownloadResult(location: location, size: size, sha256: sha)
        }
        if let e = value["error"], let code = e["code"]?.stringValue.flatMap(TaskErrorCode.init(rawValue:)) {
            error = TaskError(code: code, message: e["message"]?.stringValue ?? "", curlCode: e["curl_code"]?.intValue.map(Int.init),
                              resumeData: e["resume_data"]?.stringValue)
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
        completedAt = value["completed_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        nextAttemptAt = value["next_attempt_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        idempotencyKey = extra["idempotency_key"]?.stringValue
        idempotencyHash = extra["idempotency_hash"]?.stringValue
        validator = extra["validator"]?.stringValue
        bodyLocation = extra["body_location"]?.stringValue
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
        if let m = value["multipart"] {
            multipart = MultipartSpec(field: m["field"]?.stringValue ?? "file", filename: m["filename"]?.stringValue,
                                      mimeType: m["mime_type"]?.stringValue ?? "application/octet-stream",
                                      fields: TaskRecord.headers(m["fields"]))
        }
    }

    private static func headers(_ value: JSONValue?) -> [Header] {
        (value?.objectValue ?? []).compactMap { name, v in v.stringValue.map { Header(name: name, value: $0) } }
    }
}
