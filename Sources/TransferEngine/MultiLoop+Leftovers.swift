import CCurl
import Glibc

/// Bytes an origin sends past the end of an HTTP/1.x response (a Content-Length shorter than
/// what it sends) are not part of that response (RFC 9112 §6.3) and not a response of their
/// own: nothing was asked yet. curl 7.88 reads a body only up to its Content-Length and keeps
/// the connection, so the next request on it — another task's — would read those bytes as its
/// answer ("Received HTTP/0.9 when not allowed"). A connection kept idle with bytes waiting is
/// shut down instead (shutdown(2), not close(2): the descriptor stays curl's) and the bytes
/// waiting are read and dropped, so curl finds it closed and opens a fresh one: its liveness
/// check before reuse (7.88's `cf_socket_conn_is_alive`) takes the connection for dead only when
/// a one-byte MSG_PEEK returns 0, and bytes still queued after a shutdown answer that peek. Left
/// there, curl reused the connection, its send failed, and only curl's silent re-send on a fresh
/// connection — refused now where a re-send is not allowed (`RequestSends`) — saved the request.
/// Whether the bytes are leftovers or already another transfer's is `Leftovers`' to say.
extension MultiLoop {
    func dropConnectionWithLeftovers(_ easy: OpaquePointer, of finished: Transfer) {
        // HTTP/2 and HTTP/3 multiplex: bytes waiting there are frames, not leftovers.
        let version = CurlInfo.long(easy, CURLINFO_HTTP_VERSION)
        guard version == CURL_HTTP_VERSION_1_0 || version == CURL_HTTP_VERSION_1_1 else { return }
        var fd: curl_socket_t = -1
        guard transferd_easy_getinfo_socket(UnsafeMutableRawPointer(easy), CURLINFO_ACTIVESOCKET, &fd) == CURLE_OK, fd >= 0 else { return }
        var head = [UInt8](repeating: 0, count: 5)
        let n = head.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 5, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        guard n > 0 else { return }
        // Looked for only when bytes are waiting: rare, and a walk over the loop's transfers.
        let ends = Self.ends(of: fd)
        let holder = ends.flatMap { ends in
            sessions.values.lazy.flatMap(\.runningList).first { $0 !== finished && $0.sends.connection == ends }
        }
        guard Leftovers.mustShutConnection(waiting: head[0..<n], holder: holder?.sends) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        // What came already; at most a few MiB, and what comes later the kernel answers with a
        // reset (the connection is shut for reading).
        var sink = [UInt8](repeating: 0, count: 64 << 10)
        for _ in 0..<64 {
            guard sink.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 else { break }
        }
    }

    /// The connection's ends as curl names them (`inet_ntop`'s spelling of the peer's address).
    private static func ends(of fd: Int32) -> ConnectionEnds? {
        guard let (remoteIP, remotePort) = address(of: fd, getpeername), let (_, localPort) = address(of: fd, getsockname) else { return nil }
        return ConnectionEnds(remoteIP: remoteIP, remotePort: remotePort, localPort: localPort)
    }

    private static func address(
        of fd: Int32, _ name: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> (String, Int32)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { name(fd, $0, &length) }
        }
        guard got == 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: storage) { pointer -> (String, Int32)? in
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var address = sin.pointee.sin_addr
                    guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return nil }
                    return (spelled(text), Int32(UInt16(bigEndian: sin.pointee.sin_port)))
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var address = sin6.pointee.sin6_addr
                    guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
                    return (spelled(text), Int32(UInt16(bigEndian: sin6.pointee.sin6_port)))
                }
            default:
                return nil
            }
        }
    }

    private static func spelled(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
