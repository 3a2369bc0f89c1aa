import Glibc
import TestSupport

/// Why a raw client call failed: a timeout, the peer closing or resetting, or a malformed reply.
struct ClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A bare HTTP/1.1 client over a blocking loopback socket: it sends exactly the bytes a test gives
/// it and parses replies strictly, so the tests see the server's framing as it is on the wire.
/// Every wait is bounded by `timeout` (poll), so a server that hangs fails the test, never hangs it.
final class RawClient {
    let fd: Int32
    let timeout: Double
    /// Bytes received and not yet consumed by a `read…` call.
    private(set) var pending: [UInt8] = []
    private var sawEOF = false

    /// Connects to 127.0.0.1:`port`. Throws with the errno when the connection is refused.
    init(port: UInt16, timeout: Double = 5) throws {
        self.timeout = timeout
        fd = try LoopbackSocket.connect(port: port).get()
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A backstop for blocking sends to a server that stopped reading.
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    typealias ConnectError = LoopbackSocket.Failure

    // MARK: sending

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            throw ClientError("send failed after \(sent) of \(bytes.count) bytes: \(String(cString: strerror(errno)))")
        }
    }

    /// Sends `bytes` in pieces of `size`, pausing between them so they arrive as separate segments.
    func sendSlowly(_ bytes: [UInt8], pieceSize size: Int, pauseMicroseconds: UInt32 = 1000) throws {
        var i = 0
        while i < bytes.count {
            let end = min(i + size, bytes.count)
            try send(Array(bytes[i..<end]))
            i = end
            if pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
        }
    }

    func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    // MARK: receiving

    /// Reads once more into `pending`; false at end of input. Throws on timeout or reset.
    @discardableResult
    private func fill(deadline: Double) throws -> Bool {
        if sawEOF { return false }
        var scratch = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let remaining = deadline - now()
            guard remaining > 0 else { throw ClientError("timed out waiting for the server (have \(pending.count) bytes)") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(max(1, remaining * 1000)))
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { continue }
            let n = recv(fd, &scratch, scratch.count, 0)
            if n > 0 {
                pending.append(contentsOf: scratch[0..<n])
                return true
            }
            if n == 0 { sawEOF = true; return false }
            if errno == EINTR || errno == EAGAIN { continue }
            throw ClientError("recv: \(String(cString: strerror(errno)))")
        }
    }

    private func take(_ n: Int) -> [UInt8] {
        let out = Array(pending[0..<n])
        pending.removeFirst(n)
        return out
    }

    /// Bytes up to and including the first CRLF.
    private func readLine(deadline: Double) throws -> String {
        while true {
            if let i = pending.firstRange(of: [0x0D, 0x0A]) {
                return String(decoding: take(i.upperBound).dropLast(2), as: UTF8.self)
            }
            guard try fill(deadline: deadline) else { throw ClientError("connection closed mid-line") }
        }
    }

    func readExactly(_ n: Int, deadline: Double? = nil) throws -> [UInt8] {
        let deadline = deadline ?? now() + timeout
        while pending.count < n {
            guard try fill(deadline: deadline) else {
                throw ClientError("connection closed after \(pending.count) of \(n) bytes")
            }
        }
        return take(n)
    }

    /// Reads a status line and header section (a 1xx interim response too).
    func readHead() throws -> RawResponse {
        let deadline = now() + timeout
        let statusLine = try readLine(deadline: deadline)
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw ClientError("malformed status line: \(statusLine.debugDescription)")
        }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine(deadline: deadline)
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw ClientError("malformed header line: \(line.debugDescription)") }
            let value = line[line.index(after: colon)...].drop(while: { $0 == " " })
            headers.append((String(line[..<colon]), String(value)))
        }
        return RawResponse(version: String(parts[0]), status: status, headers: headers)
    }

    /// Reads a whole response, skipping nothing: a 1xx comes back as itself. `isHead` says the
    /// request was HEAD, whose response has no body whatever its headers say.
    func readResponse(isHead: Bool = false) throws -> RawResponse {
        var response = try readHead()
        if isHead || response.status < 200 || response.status == 204 || response.status == 304 { return response }
        let deadline = now() + timeout
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            try readChunkedBody(into: &response, deadline: deadline)
        } else if let length = response.header("Content-Length") {
            guard let n = Int(length) else { throw ClientError("bad Content-Length \(length)") }
            response.body = try readExactly(n, deadline: deadline)
        } else {
            // Delimited by the end of the connection (RFC 9112 §6.3 rule 8).
            while try fill(deadline: deadline) {}
            response.body = take(pending.count)
            response.closeDelimited = true
        }
        return response
    }

    /// Strict chunked decoding: hex size, CRLF after the size and after the data, terminating
    /// zero-size chunk and empty trailer section.
    private func readChunkedBody(into response: inout RawResponse, deadline: Double) throws {
        while true {
            let sizeLine = try readLine(deadline: deadline)
            guard !sizeLine.isEmpty, sizeLine.utf8.allSatisfy({ $0 < 0x80 && isxdigit(Int32($0)) != 0 }),
                  let size = Int(sizeLine, radix: 16)
            else { throw ClientError("malformed chunk size line \(sizeLine.debugDescription)") }
            if size == 0 {
                while try !readLine(deadline: deadline).isEmpty {}
                response.sawLastChunk = true
                return
            }
            response.chunkSizes.append(size)
            response.body += try readExactly(size, deadline: deadline)
            guard try readExactly(2, deadline: deadline) == [0x0D, 0x0A] else {
                throw ClientError("chunk data not followed by CRLF")
            }
        }
    }

    /// Waits for the server to close: true on EOF or reset, false when it is still open at the deadline.
    /// Bytes that arrive meanwhile are kept in `pending`.
    func waitForClose(within seconds: Double? = nil) -> Bool {
        let deadline = now() + (seconds ?? timeout)
        do {
            while try fill(deadline: deadline) {}
            return true
        } catch let error as ClientError where error.description.hasPrefix("recv") {
            return true  // reset by the peer
        } catch {
            return false
        }
    }

    /// True when the connection is open and nothing arrived within `seconds`.
    func isQuiet(for seconds: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, Int32(seconds * 1000)) == 0 && pending.isEmpty
    }
}

/// A response as it came off the wire.
struct RawResponse {
    var version: String
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8] = []
    /// Sizes of the chunks of a chunked body, in order.
    var chunkSizes: [Int] = []
    var sawLastChunk = false
    var closeDelimited = false

    init(version: String, status: Int, headers: [(String, String)]) {
        self.version = version
        self.status = status
        self.headers = headers
    }

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
    }

    var text: String { String(decoding: body, as: UTF8.self) }
    var closes: Bool { header("Connection")?.lowercased() == "close" }
}

/// Monotonic seconds.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Polls `condition` every 10 ms for up to `seconds`; returns its last value.
func eventually(within seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = now() + seconds
    while now() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// A simple request with the headers every HTTP/1.1 request needs.
func request(_ method: String, _ target: String, headers: [String] = [], body: String? = nil) -> String {
    var text = "\(method) \(target) HTTP/1.1\r\nHost: test\r\n"
    for h in headers { text += h + "\r\n" }
    if let body { text += "Content-Length: \(body.utf8.count)\r\n\r\n" + body } else { text += "\r\n" }
    return text
}
