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
///
/// By the time curl reports a transfer done, it may already have handed the kept connection to
/// the next transfer within the same step, and the bytes waiting are then that transfer's
/// response; shutting the connection down failed it (it ran again). curl does not say which
/// transfer holds a reused connection until that one is done, so bytes that begin like a status
/// line ("HTTP/") are taken for a response and left alone; leftovers of a body are not.
extension MultiLoop {
    func dropConnectionWithLeftovers(_ easy: OpaquePointer) {
        // HTTP/2 and HTTP/3 multiplex: bytes waiting there are frames, not leftovers.
        let version = CurlInfo.long(easy, CURLINFO_HTTP_VERSION)
        guard version == CURL_HTTP_VERSION_1_0 || version == CURL_HTTP_VERSION_1_1 else { return }
        var fd: curl_socket_t = -1
        guard transferd_easy_getinfo_socket(UnsafeMutableRawPointer(easy), CURLINFO_ACTIVESOCKET, &fd) == CURLE_OK, fd >= 0 else { return }
        var head = [UInt8](repeating: 0, count: 5)
        let n = head.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 5, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        guard n > 0, !head[0..<n].elementsEqual(Array("HTTP/".utf8).prefix(n)) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        // What came already; at most a few MiB, and what comes later the kernel answers with a
        // reset (the connection is shut for reading).
        var sink = [UInt8](repeating: 0, count: 64 << 10)
        for _ in 0..<64 {
            guard sink.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 else { break }
        }
    }
}
