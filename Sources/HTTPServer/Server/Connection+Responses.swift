import CLinux
import Glibc
import Reactor

/// Writing responses in request order: whole bodies, files by sendfile, chunked streams.
extension Connection {
    // MARK: responses

    func send(_ response: HTTPResponse, generation: UInt64) {
        guard generation == self.generation, phase == .handling, var ex = exchange
        else {
            if case .file(let region) = response.body { region.close() }
            if case .fileParts(let parts) = response.body { Glibc.close(parts.fd) }
            return
        }
        var response = response
        response.addProblemInstance(ex.requestID)
        let config = limits
        // HTTP/1.0 has no chunked coding: a streamed body is delimited by closing the connection.
        let rawStream: Bool = if case .stream = response.body { ex.head.versionMinor == 0 } else { false }
        let keepAlive = ex.head.keepAlive && !ex.unreadBody && !draining && !rawStream
            && requestCount < config.maxRequestsPerConnection
        ex.status = response.status
        ex.location = response.headers["location"]
        ex.closeAfter = !keepAlive
        exchange = ex

        var headers = response.headers
        for (name, value) in ex.admission.responseHeaders { headers.add(name, value) }
        var head = ResponseHead(status: response.status, headers: headers, versionMinor: ex.head.versionMinor,
                                keepAlive: keepAlive, requestID: ex.requestID, date: worker.date())
        // RFC 9110 §6.4.1, RFC 9112 §6.3: a response to HEAD, and a 1xx, 204 or 304, ends at its
        // header section; body bytes a handler passed anyway would be read as the next response.
        let sendsBody = !ex.head.isHead && !ResponseHead.isBodyless(response.status)
        switch response.body {
        case .empty:
            head.contentLength = 0
            head.serialize(into: &outbound)
        case .bytes(let bytes):
            head.contentLength = bytes.count
            head.serialize(into: &outbound)
            if sendsBody { outbound.append(contentsOf: bytes) }
        case .file(let region):
            head.contentLength = region.count
            head.serialize(into: &outbound)
            if sendsBody { file = region; fileSent = 0 } else { region.close() }
        case .fileParts(let parts):
            head.contentLength = parts.contentLength
            head.serialize(into: &outbound)
            if sendsBody { fileParts = (parts, 0) } else { Glibc.close(parts.fd) }
        case .stream(let producer):
            head.chunked = !rawStream && !ResponseHead.isBodyless(response.status)
            chunkedStream = !rawStream
            streamLength = nil
            head.serialize(into: &outbound)
            if sendsBody { startStream(producer) }
        case .streamOfLength(let length, let producer):
            head.contentLength = length
            chunkedStream = false
            streamLength = length
            streamWritten = 0
            head.serialize(into: &outbound)
            if sendsBody { startStream(producer) }
        }
        phase = .writing
        deadline = MonotonicClock.after(seconds: config.writeTimeout)
        flush()
    }

    private func startStream(_ producer: @Sendable (ResponseStream) -> Void) {
        let s = ResponseStream(connection: self, loop: worker.loop, generation: generation)
        stream = s
        streamFinished = false
        producer(s)
    }

    func writeChunk(_ bytes: [UInt8], generation: UInt64, whenSent: (@Sendable () -> Void)? = nil) {
        guard generation == self.generation, stream != nil, !streamFinished, phase == .writing else { return }
        if let length = streamLength {
            streamWritten += bytes.count
            // More than the Content-Length promised would be read as the next response.
            if streamWritten > length { return close() }
        }
        if let whenSent { streamSentActions.append(whenSent) }
        if chunkedStream {
            outbound.append(contentsOf: Array(String(bytes.count, radix: 16).utf8))
            outbound.append(contentsOf: Connection.crlf)
            outbound.append(contentsOf: bytes)
            outbound.append(contentsOf: Connection.crlf)
        } else {
            outbound.append(contentsOf: bytes)
        }
        // A client that reads nothing while events pile up is cut off, not buffered for forever.
        if outbound.count - outboundSent > 16 * 1024 * 1024 { return close() }
        flush()
    }

    func finishStream(generation: UInt64) {
        guard generation == self.generation, stream != nil, !streamFinished, phase == .writing else { return }
        // Short of its Content-Length, the client would wait for the rest: closing tells it the body is incomplete.
        if let length = streamLength, streamWritten != length { return close() }
        if chunkedStream { outbound.append(contentsOf: Connection.lastChunk) }
        streamFinished = true
        flush()
    }

    func abortStream(generation: UInt64) {
        guard generation == self.generation, stream != nil, phase == .writing else { return }
        close()
    }

    /// Writes what is pending; completes the response when everything is out.
    func flush() {
        while flushOnce(), let (parts, next) = fileParts {
            // The next part's head (or the closing delimiter) goes out, then its region.
            if next < parts.parts.count {
                let part = parts.parts[next]
                fileParts = (parts, next + 1)
                outbound.append(contentsOf: part.head)
                file = FileRegion(fd: parts.fd, offset: part.offset, count: part.count)
                fileSent = 0
            } else {
                outbound.append(contentsOf: parts.trailer)
                Glibc.close(parts.fd)
                fileParts = nil
            }
        }
        guard phase == .writing, fileParts == nil, file == nil, outboundSent == 0, outbound.isEmpty else { return }
        if !streamSentActions.isEmpty {
            let actions = streamSentActions
            streamSentActions = []
            for action in actions { action() }
        }
        guard streamFinished else {
            // All written so far is out, and the stream waits on its producer: an event stream
            // may be quiet for minutes, which is no client stalling a write. Without this, every
            // pause longer than `writeTimeout` cut the stream off.
            deadline = .max
            return
        }
        responseComplete()
    }

    /// Writes the pending bytes, then the file region; false when the socket is full (or closed)
    /// before both are out.
    private func flushOnce() -> Bool {
        while outboundSent < outbound.count {
            let n = outbound.withUnsafeBytes { buf in
                Glibc.send(fd, buf.baseAddress! + outboundSent, buf.count - outboundSent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                outboundSent += n
                deadline = phase == .writing ? MonotonicClock.after(seconds: limits.writeTimeout) : deadline
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                // A stream's new chunk met a socket still full of earlier ones: the client is
                // not reading, which is what the write timeout is for.
                if phase == .writing && deadline == .max {
                    deadline = MonotonicClock.after(seconds: limits.writeTimeout)
                }
                return false
            }
            close()
            return false
        }
        if outbound.capacity > 256 * 1024 {
            outbound = []
        } else {
            outbound.removeAll(keepingCapacity: true)
        }
        outboundSent = 0
        if let region = file {
            while fileSent < region.count {
                var offset = off_t(region.offset + fileSent)
                let n = sendfile(fd, region.fd, &offset, min(region.count - fileSent, 1 << 30))
                if n > 0 {
                    fileSent += n
                    deadline = MonotonicClock.after(seconds: limits.writeTimeout)
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return false }
                // The file shrank under us or the client went away: the response cannot complete.
                close()
                return false
            }
            // A part's region shares the parts' descriptor, closed after the last part.
            if fileParts == nil { region.close() }
            file = nil
        }
        return phase != .closed
    }

    func responseComplete() {
        if let s = stream {
            stream = nil
            s.terminated()
        }
        guard let ex = exchange else { return }
        exchange = nil
        worker.recordCompleted(ex, remoteAddress: remoteAddress)
        // Draining (shutdown) closes after the current response even if it promised keep-alive
        // (RFC 9112 §9.6 lets a server close between responses); otherwise the connection would
        // sit idle until the grace period ran out.
        if ex.closeAfter || draining {
            // Requests the client pipelined and we will not answer may still be arriving; a plain
            // close with unread input sends a reset that can destroy the response in flight.
            return ex.unreadBody || !inbound.isEmpty ? lingeringClose() : close()
        }
        phase = .awaitingHead
        inbound.releaseIfEmpty()
        deadline = MonotonicClock.after(seconds: inbound.isEmpty
            ? limits.idleTimeout : limits.headerTimeout)
        if !inbound.isEmpty || readable { process() }
    }
}
