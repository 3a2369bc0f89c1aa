import CCurl
import Glibc

/// A URL as libcurl parses it, so what the API validates is exactly what curl will fetch.
public struct URLParts: Sendable, Equatable {
    public let scheme: String
    public let host: String
    public let port: Int
    public let path: String

    /// nil when curl cannot parse `text` as an absolute URL.
    public init?(_ text: String) {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        // CURLU_NON_SUPPORT_SCHEME: parse any scheme, so `file:` or `gopher:` is reported as
        // unsupported by the caller rather than as malformed.
        guard curl_url_set(handle, CURLUPART_URL, text, UInt32(CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK else { return nil }
        func part(_ p: CURLUPart, _ flags: Int32 = 0) -> String? {
            var out: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, p, &out, UInt32(flags)) == CURLUE_OK, let out else { return nil }
            defer { curl_free(out) }
            return String(cString: out)
        }
        guard let scheme = part(CURLUPART_SCHEME)?.lowercased() else { return nil }
        self.scheme = scheme
        host = part(CURLUPART_HOST)?.lowercased() ?? ""
        port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT).flatMap { Int($0) } ?? 0
        path = part(CURLUPART_PATH) ?? "/"
    }

    public var isHTTP: Bool { scheme == "http" || scheme == "https" }

    /// Resolves a `Location` value against the URL it came from (RFC 3986 §5), as curl will.
    public static func resolve(_ reference: String, against base: String) -> String? {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        let flags = UInt32(CURLU_NON_SUPPORT_SCHEME)
        guard curl_url_set(handle, CURLUPART_URL, base, flags) == CURLUE_OK,
              curl_url_set(handle, CURLUPART_URL, reference, flags) == CURLUE_OK
        else { return nil }
        var out: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_URL, &out, 0) == CURLUE_OK, let out else { return nil }
        defer { curl_free(out) }
        return String(cString: out)
    }

    public var hostKey: String { "\(scheme)://\(host):\(port)" }

    public var lastPathSegment: String? { URLParts.lastSegment(ofPath: Substring(path)) }

    /// The last path segment of a URL that curl accepted (scheme://authority/path?query#fragment),
    /// found by scanning its bytes rather than by a full parse: every response asks for it.
    public static func lastPathSegment(of url: String) -> String? {
        let bytes = url.utf8
        let slash = UInt8(ascii: "/")
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        // After "scheme:" and the "//" that opens the authority, the path is what starts at the next "/".
        guard let colon = bytes[..<end].firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let authority = bytes.index(after: colon)
        guard bytes[authority..<end].starts(with: "//".utf8) else { return nil }
        guard let path = bytes[bytes.index(authority, offsetBy: 2)..<end].firstIndex(of: slash) else { return nil }
        var segmentEnd = end
        while segmentEnd > path && bytes[bytes.index(before: segmentEnd)] == slash { segmentEnd = bytes.index(before: segmentEnd) }
        guard segmentEnd > path, let before = bytes[path..<segmentEnd].lastIndex(of: slash) else { return nil }
        return String(decoding: bytes[bytes.index(after: before)..<segmentEnd], as: UTF8.self).removingPercentEncoding()
    }

    private static func lastSegment(ofPath path: Substring) -> String? {
        guard let last = path.split(separator: "/").last, !last.isEmpty else { return nil }
        return String(last).removingPercentEncoding()
    }
}

extension String {
    /// `%XX` escapes decoded; a `%` not followed by two hex digits is kept as it is.
    package func removingPercentEncoding() -> String {
        guard utf8.contains(0x25) else { return self }
        var out: [UInt8] = []
        var bytes = Array(utf8)[...]
        while let c = bytes.popFirst() {
            if c == 0x25, bytes.count >= 2, let h = hexDigit(bytes[bytes.startIndex]), let l = hexDigit(bytes[bytes.startIndex + 1]) {
                out.append(h << 4 | l)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

private func hexDigit(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: c - 0x30
    case 0x41...0x46: c - 0x41 + 10
    case 0x61...0x66: c - 0x61 + 10
    default: nil
    }
}
