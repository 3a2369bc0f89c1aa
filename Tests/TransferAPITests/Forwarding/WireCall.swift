import Glibc
import TestSupport

/// One request on a loopback connection of its own, with `Connection: close`, its response read to
/// the end: the bytes exactly as sent and received, so a test sees every field a replica wrote.
/// Sending and reading are separate steps, so many calls can be in flight from one thread.
final class WireCall {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Response {
        let status: Int
        let fields: [(name: String, value: String)]
        let body: [UInt8]

        func field(_ name: String) -> String? { fields.first { $0.name.lowercased() == name.lowercased() }?.value }
        func values(_ name: String) -> [String] { fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private let fd: Int32

    init(port: UInt16, _ method: String, _ target: String, fields: [(String, String)] = [], body: [UInt8] = []) throws {
        fd = try LoopbackSocket.connect(port: port).get()
        // A replica that stops answering fails the test instead of hanging it.
        var limit = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else { throw Failure(description: "sent \(sent) of \(request.count) bytes") }
    }

    deinit { close(fd) }

    /// Reads until the server closes, then parses status line, fields and body.
    func response() throws -> Response {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { bytes += buffer[0..<n]; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            throw Failure(description: "recv after \(bytes.count) bytes: \(String(cString: strerror(errno)))")
        }
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failure(description: "no complete head in \(bytes.count) bytes") }
        let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n")
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        let fields = lines.dropFirst().map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":") ?? line.endIndex
            return (String(line[..<colon]), String(line[colon...].dropFirst().drop { $0 == " " }))
        }
        return Response(status: status, fields: fields, body: Array(bytes[end.upperBound...]))
    }

    static func call(port: UInt16, _ method: String, _ target: String, fields: [(String, String)] = [], body: [UInt8] = []) throws -> Response {
        try WireCall(port: port, method, target, fields: fields, body: body).response()
    }
}
