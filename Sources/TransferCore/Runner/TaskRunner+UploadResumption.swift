import Glibc
import Lifecycles
import TransferEngine
import TransferModel
import TransferVocabulary

/// Resumable uploads (`upload.resumable`): each exchange with the origin is one engine transfer,
/// the protocol's value (`UploadResumption`, in the task record) says which. An exchange that
/// leads straight to the next one (the offset learnt, a resource created, a 409) sends it from
/// here without the task's lifecycle seeing an attempt end; one that needs a pause (a lost
/// connection, a 5xx) goes through the retry policy like any failed attempt, and the next start
/// asks the upload resource for its offset (`HEAD`) — after a restart too, since the resource
/// and the confirmed offset are in the stored task.
extension TaskRunner {
    /// The spec for the upload's next exchange, or `spec` as it is for a plain request: a
    /// multipart body, a body of unknown length, `upload.resumable: off`, not an upload.
    func resumableExchange(of record: TaskRecord, body: TaskBody, spec: TransferSpec, entry: TaskEntry,
                           in session: SessionState) -> TransferSpec
    {
        guard record.kind == .upload, let dialect = record.resumable.dialect, body.multipart == nil,
              let length = body.knownLength else { return spec }
        var resumption = record.uploadState.flatMap { $0.dialect == dialect && $0.length == length ? $0 : nil }
            ?? UploadResumption(dialect: dialect, method: record.method, url: record.url, length: length)
        let request = resumption.nextRequest
        resumption.requestSent(request)
        session.locked { entry.record.uploadState = resumption }
        var exchange = spec
        exchange.method = request.method
        exchange.url = request.url
        let names = Set(request.headers.map { $0.name.lowercased() })
        exchange.headers.removeAll { names.contains($0.0.lowercased()) }
        exchange.headers += request.headers.map { ($0.name, $0.value) }
        exchange.preparer = TaskFilePreparer(files: files, session: session, entry: entry,
                                             body: request.bodyFrom == nil ? TaskBody(content: nil, multipart: nil) : body,
                                             bodyFrom: request.bodyFrom ?? 0)
        return exchange
    }

    /// An exchange of a resumable upload ended: the outcome the task's attempt ends with, or nil
    /// when the next exchange went out in its place. A plain upload's outcome passes unchanged.
    func uploadExchangeEnded(_ handle: TransferHandle, _ outcome: TransferOutcome, entry: TaskEntry,
                             in session: SessionState) -> TransferOutcome?
    {
        let stepped: (UploadResumption.Action, UploadResumption)? = session.locked {
            guard entry.transfer === handle, !session.released, outcome.started, var state = entry.record.uploadState else { return nil }
            // A stopped exchange (suspended, cancelled, shut down) counts as cut: the next start
            // asks for the offset.
            let ending: UploadResumption.Ending = if let response = outcome.response, outcome.failure == nil {
                .response(UploadResumption.Reply(response), bodyBytesSent: outcome.bytesSent)
            } else {
                .interrupted(bodyBytesSent: outcome.bytesSent)
            }
            let action = state.exchangeEnded(ending)
            entry.record.uploadState = state
            if state.resource != nil { entry.record.progress.bytesSent = state.offset }
            return (action, state)
        }
        guard let (action, state) = stepped else { return outcome }
        var result = outcome
        // `progress.bytes_sent` counts what the origin confirmed, not what went out (a plain
        // upload's, without an upload resource, what went out).
        if state.resource != nil { result.bytesSent = state.offset }
        guard outcome.stopReason == nil else { return result }
        switch action {
        case .report:
            return result
        case .retryLater:
            if result.failure == nil {
                let status = outcome.response.map { "HTTP \($0.status)" } ?? "no answer"
                result.failure = TransferFailure(.badServerResponse, "\(status) during a resumable upload; it continues from the origin's offset")
            }
            return result
        case .fail(let reason):
            result.failure = TransferFailure(.httpError, reason)
            return result
        case .sendNext:
            return sendNextExchange(after: handle, entry: entry, in: session) ? nil : result
        }
    }

    /// Hands the upload's next exchange to the engine in place of the one that ended, unless the
    /// task was suspended or cancelled meanwhile (then the ended exchange ends the attempt).
    private func sendNextExchange(after handle: TransferHandle, entry: TaskEntry, in session: SessionState) -> Bool {
        let (record, configuration) = session.locked { (entry.record, session.configuration) }
        let remaining = record.createdAt.adding(seconds: configuration.timeoutResource).seconds - clock.now().seconds
        guard remaining > 0, let body = try? files.planBody(for: record, session: session) else { return false }
        let spec = transferSpec(record, configuration: configuration, body: body, remaining: remaining, entry: entry, in: session)
        let observer = TaskTransferObserver(runner: self, session: session, entry: entry, continuing: true)
        let stillRunning = { entry.transfer === handle && entry.lifecycle.state == .running }
        let ended: TaskOutput?? = session.locked {
            guard stillRunning() else { return .none }
            defer { entry.output = nil }
            return .some(entry.output)
        }
        guard case .some(let output) = ended else { return false }
        // The ended exchange's response body (a HEAD's, a 409's) is not the task's; gone before
        // the next exchange opens the file of the same name.
        output?.discard()
        let sent: Bool = session.locked {
            guard stillRunning() else { return false }
            entry.transfer = engine.submit(spec, observer: observer)
            return true
        }
        if sent { journal.noteTransferChange(entry, in: session, events: []) { _ in } }
        return sent
    }
}

extension UploadResumption.Reply {
    init(_ head: ResponseHead) {
        var fields: [String: String] = [:]
        for (name, value) in head.headers { fields[name.lowercased()] = value }
        self.init(status: head.status, fields: fields,
                  location: head.header("location").flatMap { URLParts.resolve($0, against: head.url) })
    }
}

extension TaskBody {
    /// The body's length before it is opened (a stat of its file), for `Upload-Length`; nil when
    /// unknown.
    var knownLength: Int64? {
        switch content {
        case .bytes(let bytes)?:
            return Int64(bytes.count)
        case .kept(let path, _)?, .clientFile(let path)?, .destination(let path)?:
            var st = stat()
            return stat(path, &st) == 0 ? Int64(st.st_size) : nil
        case nil:
            return nil
        }
    }
}

extension RequestBodySource {
    /// The body without its first `count` bytes: what an append sends.
    func dropping(first count: Int64) -> RequestBodySource {
        guard count > 0 else { return self }
        switch self {
        case .none:
            return .none
        case .bytes(let bytes):
            return .bytes(Array(bytes.dropFirst(Int(count))))
        case .segments(let segments):
            var skip = count
            // Segments skipped whole stay, empty, so their descriptors are closed with the rest.
            return .segments(segments.map { segment in
                switch segment {
                case .bytes(let bytes):
                    let n = min(skip, Int64(bytes.count))
                    skip -= n
                    return .bytes(Array(bytes.dropFirst(Int(n))))
                case .file(let fd, let offset, let length):
                    let n = min(skip, length)
                    skip -= n
                    return .file(fd: fd, offset: offset + n, length: length - n)
                }
            })
        }
    }
}
