import Digests
@testable import TransferModel
@testable import TransferStore

/// Task records as they are stored in practice and at the edges, for the tests of what reads back.
enum StoredRecords {
    typealias F = Fixture

    /// A download as one completes: response with the usual headers, progress, result, metrics.
    static func completedDownload(_ id: String, sequence: Int64) -> TaskRecord {
        var t = F.task(id, sequence: sequence, state: .completed)
        t.destination = "/data/out/\(id).bin"
        t.currentURL = t.url
        t.response = TaskResponse(status: 200, headers: [Header(name: "Content-Type", value: "application/octet-stream"),
                                                         Header(name: "Content-Length", value: "16384"),
                                                         Header(name: "ETag", value: #""6b06-4000""#)],
                                  mimeType: "application/octet-stream", expectedContentLength: 16384, suggestedFilename: "\(id).bin")
        t.validator = #""6b06-4000""#
        t.progress.bytesReceived = 16384
        t.progress.bytesExpectedToReceive = 16384
        t.progress.bytesPerSecond = 1_234_567.4
        t.result = DownloadResult(location: "/data/out/\(id).bin", size: 16384, digests: [(.sha256, String(repeating: "ab", count: 32))])
        t.metrics.attempts = 1
        t.metrics.remoteAddress = "127.0.0.1:8080"
        t.metrics.httpProtocol = "http/1.1"
        t.metrics.reusedConnection = true
        t.metrics.firstByteMs = 0.395
        t.metrics.totalMs = 0.456
        t.startedAt = Timestamp(milliseconds: F.start + 500)
        return t
    }

    /// Every member set, and set to what is not the usual (what the stored form leaves out when it
    /// is usual), so that a member left out by mistake shows.
    static func unusual() -> TaskRecord {
        var t = TaskRecord(session: "s1", id: "odd", sequence: 7, kind: .upload, url: "https://example.com/up?a=1", method: "POST",
                           createdAt: Timestamp(milliseconds: F.start + 7))
        t.state = .running
        t.phase = .transferring
        t.priority = 0.1
        t.description = "a \"quoted\" é description\n"
        t.headers = [Header(name: "X-A", value: "1"), Header(name: "x-b", value: ""), Header(name: "X-A", value: "2")]
        t.body = .blob(id: "b_1", owned: true)
        t.multipart = MultipartSpec(field: "f", filename: nil, mimeType: "text/plain", fields: [Header(name: "k", value: "v")])
        t.checksum = Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32))
        t.digests = [.sha256, .crc32c]
        t.beginAt = Timestamp(milliseconds: F.start + 10)
        t.currentURL = "https://example.com/elsewhere"
        // Content-Type with a parameter, a Content-Length written oddly, an ETag that is not the validator.
        t.response = TaskResponse(status: 206, headers: [Header(name: "Content-Type", value: "text/html; charset=utf-8"),
                                                         Header(name: "Content-Length", value: "007"), Header(name: "ETag", value: "e1")],
                                  mimeType: "text/html", expectedContentLength: 7, suggestedFilename: nil)
        t.validator = nil
        t.progress = TaskProgress(bytesReceived: 5, bytesExpectedToReceive: -1, bytesSent: 3, bytesExpectedToSend: 10, bytesPerSecond: 0)
        t.result = DownloadResult(location: "/elsewhere", size: 4, digests: [(.sha256, String(repeating: "cd", count: 32)), (.crc32c, "0a0b0c0d")])
        t.error = TaskError(code: .timedOut, message: "m", curlCode: 28, resumeData: "rd")
        t.metrics.redirectCount = 2
        t.metrics.dnsMs = 1.5
        t.metrics.connectMs = 0.25
        t.metrics.tlsMs = 3
        t.startedAt = Timestamp(milliseconds: F.start + 20)
        t.nextAttemptAt = Timestamp(milliseconds: F.start + 30)
        t.idempotencyKey = "key"
        t.idempotencyHash = "hash"
        t.bodyLocation = "/body"
        t.resumeFrom = ResumeData(url: "https://example.com/r", validator: "v", offset: 9, partial: "/p", destination: nil, origin: "s0/t0")
        return t
    }

    /// What must read back: the API object byte for byte, and transferd's own fields.
    static func same(_ a: TaskRecord, _ b: TaskRecord) -> Bool {
        a.jsonBytes() == b.jsonBytes() && a.sequence == b.sequence && a.idempotencyKey == b.idempotencyKey
            && a.idempotencyHash == b.idempotencyHash && a.validator == b.validator && a.bodyLocation == b.bodyLocation
            && a.resumeFrom == b.resumeFrom && a.body == b.body && a.phase == b.phase
    }

    /// A completion's batch: the record and its events, whose data is the record's members.
    static func completion(_ done: TaskRecord, firstSeq: Int64) -> (StoreChange, [Event]) {
        let at = Timestamp(milliseconds: F.start + 2000)
        let drafts: [(EventType, [UInt8])] = [(.taskResponseReceived, done.response!.jsonBytes()),
                                              (.taskFinishedDownloading, done.result!.jsonBytes()),
                                              (.taskCompleted, done.jsonBytes())]
        var events = drafts.enumerated().map { i, d in
            Event(id: Event.newID(at: at), seq: firstSeq + Int64(i), session: done.session, type: d.0, task: done.id, at: at, data: d.1)
        }
        events.append(Event(id: Event.newID(at: at), seq: firstSeq + 3, session: done.session, type: .sessionAllTasksFinished,
                            at: at, data: Array("{}".utf8)))
        return (.insertEvents(events), events)
    }
}
