import Digests
import TransferVocabulary

/// Why the engine was asked to stop a transfer early.
public enum StopReason: Sendable, Equatable {
    case cancelled, suspended, shutdown, resourceTimeout
    /// Cluster mode: the session's lease is lost — a write to the output came past the lease's
    /// deadline (`WriteFence`), or the caller let the session go — and no more was written; the
    /// session's files may be another replica's by now.
    case fenced
}

/// The head of the final response (after redirects).
public struct ResponseHead: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var url: String

    public init(status: Int, headers: [(String, String)], url: String) {
        self.status = status
        self.headers = headers
        self.url = url
    }

    /// The last field named `name` (lower-case), compared case-insensitively (RFC 9110 §5.1)
    /// without lower-casing every name on every lookup: a response head is asked a dozen times.
    public func header(_ name: String) -> String? {
        headers.last { ResponseHead.isField($0.0, named: name) }?.1
    }

    /// Whether the field name `field` is `name` (lower-case ASCII), in any case.
    static func isField(_ field: String, named name: String) -> Bool {
        guard field.utf8.count == name.utf8.count else { return false }
        for (a, b) in zip(field.utf8, name.utf8) where a != b {
            guard a >= 0x41 && a <= 0x5A && a | 0x20 == b else { return false }
        }
        return true
    }

    public var mimeType: String? {
        header("content-type").map { value in
            // Most values carry no parameters: nothing to split off.
            let type = value.utf8.contains(UInt8(ascii: ";")) ? String(value.split(separator: ";")[0]) : value
            return type.trimmed().lowercased()
        }
    }

    public var expectedContentLength: Int64? { header("content-length").flatMap { Int64($0.trimmed()) } }

    /// RFC 6266 filename (plain or RFC 8187 `filename*`), else the last path segment of the URL.
    /// Reported to clients only; never used to name a file on disk.
    public var suggestedFilename: String? {
        if let disposition = header("content-disposition"), let name = ContentDisposition.filename(disposition) {
            return name
        }
        return URLParts.lastPathSegment(of: url)
    }
}

/// Timings and connection facts from curl (URLSessionTaskMetrics).
public struct TransferMetrics: Sendable, Equatable {
    public var redirectCount = 0
    public var remoteAddress: String?
    public var httpVersion: String?
    public var reusedConnection = false
    public var dnsMs = 0.0, connectMs = 0.0, tlsMs = 0.0, firstByteMs = 0.0, totalMs = 0.0

    public init() {}
}

/// What one attempt came to.
public struct TransferOutcome: Sendable {
    /// The attempt began: admitted, its files opened, its request on its way. One stopped while
    /// it waited, or refused at admission, moved nothing and has no progress to report.
    public var started = false
    /// A request went out (or began to): the origin may have seen it, and may have acted on it.
    /// false when the attempt failed before that — name resolution, connect, TLS handshake.
    public var requestSent = false
    /// Times the transport sent the same request again on a fresh connection after a reused one
    /// closed before any response (`TransferSpec.resendLimit`): attempts the origin may have seen.
    public var resends = 0
    public var failure: TransferFailure?
    public var stopReason: StopReason?
    public var response: ResponseHead?
    /// Size of the output: for a file, what it holds now (a resumed prefix included).
    public var bytesReceived: Int64 = 0
    public var bytesSent: Int64 = 0
    /// Length of the request body (0 without one).
    public var bytesExpectedToSend: Int64 = 0
    /// Hex digests of the whole output file, when asked for and the transfer succeeded.
    public var digests: [DigestAlgorithm: String]?
    /// What the final response declared of the file (`spec.verifyOriginDigests`); `digests`
    /// holds each one's algorithm.
    public var declaredDigests: [DeclaredDigest] = []
    /// The digests continued from a checkpoint at this offset instead of the file's first byte.
    public var digestsContinuedFrom: Int64?
    /// The body, for `.memory` output.
    public var body: [UInt8]?
    public var metrics = TransferMetrics()
    /// The range request was answered with the full body, so the file was started over.
    public var restartedFromZero = false
    /// The range request was honoured: the transfer continued from this offset.
    public var resumedAtOffset: Int64?

    public init() {}
}

extension String {
    func trimmed() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" || l == "\n" { s = s.dropLast() }
        return String(s)
    }
}
