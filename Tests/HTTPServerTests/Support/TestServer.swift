import Dispatch
import Foundation
import Logging
import Testing
@testable import HTTPServer

/// A real `HTTPServer` on an ephemeral loopback port, for one test. Always call `shutdown()`
/// (tests use `defer`), so no loop thread outlives its test.
final class TestServer {
    let server: HTTPServer
    var port: UInt16 { server.boundAddress.port }

    init(configure: (inout HTTPServerConfiguration) -> Void = { _ in },
         routes: (inout RouteTable) -> Void) throws
    {
        var configuration = HTTPServerConfiguration(address: SocketAddress("127.0.0.1:0")!, loopCount: 2)
        configuration.shutdownGrace = 3
        configure(&configuration)
        var logger = Logger(label: "http-test")
        logger.logLevel = .warning
        server = try HTTPServer(configuration: configuration, router: Router(routes), logger: logger)
    }

    func connect(timeout: Double = 5) throws -> RawClient { try RawClient(port: port, timeout: timeout) }

    func shutdown() { server.shutdown() }
}

/// Integration tests share loopback ports, timers and two cores; running them one at a time keeps
/// their (generous) time bounds meaningful.
@Suite(.serialized) enum Integration {}

extension HTTPResponse {
    static func text(_ text: String, headers: [(String, String)]) -> HTTPResponse {
        var response = HTTPResponse.text(text)
        for (name, value) in headers { response.headers.add(name, value) }
        return response
    }
}

/// Runs `work` on another thread after `seconds`, as a handler waiting on a store or an engine would.
func later(_ seconds: Double, _ work: @escaping @Sendable () -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: work)
}

/// FNV-1a, 64-bit: enough to compare megabytes sent with megabytes received.
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        for b in bytes { value = (value ^ UInt64(b)) &* 0x100_0000_01b3 }
    }
    mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }
    static func hash(_ bytes: [UInt8]) -> UInt64 { var h = FNV1a(); h.update(bytes); return h.value }
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
func patternBytes(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
    var state = seed | 1
    // Eight bytes per step: tests run unoptimised, and some want tens of megabytes.
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var i = 0
        while i < count {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            var word = state
            for _ in 0..<min(8, count - i) {
                buffer[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        initialized = count
    }
}

/// Encodes `body` with chunked transfer coding in chunks of the given sizes (cycled).
func chunked(_ body: [UInt8], sizes: [Int], trailers: [String] = []) -> [UInt8] {
    var out: [UInt8] = []
    var i = 0, k = 0
    while i < body.count {
        let n = min(sizes[k % sizes.count], body.count - i)
        k += 1
        out += Array(String(n, radix: 16).utf8) + [0x0D, 0x0A]
        out += body[i..<i + n]
        out += [0x0D, 0x0A]
        i += n
    }
    out += Array("0\r\n".utf8)
    for t in trailers { out += Array((t + "\r\n").utf8) }
    out += [0x0D, 0x0A]
    return out
}

/// Parses a JSON object body (problem documents, test echoes).
func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
    let value = try JSONSerialization.jsonObject(with: Data(bytes))
    guard let object = value as? [String: Any] else { throw ClientError("not a JSON object: \(String(decoding: bytes, as: UTF8.self))") }
    return object
}

/// Checks a Date header is an IMF-fixdate (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
func isIMFFixdate(_ value: String?) -> Bool {
    guard let value else { return false }
    return value.utf8.count == 29 && value.hasSuffix(" GMT") && value.dropFirst(3).hasPrefix(", ")
}
