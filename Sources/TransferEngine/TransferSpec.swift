import Digests
import TransferVocabulary
/// Everything one attempt of a transfer needs. The engine runs it; what to do with the outcome
/// (retry, resume, complete the task) is the caller's business.
public struct TransferSpec: Sendable {
    /// For logs: `session/task`.
    public var label: String
    /// Transfers of one session share a loop, a cookie jar and caches, and its admission limits.
    public var session: String
    public var url: String {
        didSet { hostKey = TransferSpec.hostKey(of: url) }
    }
    /// `scheme://host:port` of the URL, the unit `max_connections_per_host` counts: kept, not
    /// parsed at each ask, since the engine asks several times a transfer.
    public private(set) var hostKey: String
    public var method: String = "GET"
    public var headers: [(String, String)] = []
    public var body: RequestBodySource = .none
    public var output: OutputTarget = .discard
    /// Opens the body and output when the transfer is admitted; what it returns takes the place
    /// of `body`, `output` and `resume`. nil: those are ready as they are.
    public var preparer: (any TransferPreparer)?
    /// A body beyond this fails the transfer with `dataLengthExceedsMaximum`: as soon as its
    /// head declares a longer one, or as its bytes pass the limit. For a continued file it counts
    /// the whole file, what it held included.
    public var maxBodyBytes: Int64?
    /// Continue a partial file: `Range: bytes=offset-` with `If-Range` (RFC 9110 §13.1.5).
    public var resume: ResumeRequest?
    /// No bytes moved for this long ends the attempt with `timedOut`.
    public var idleTimeout: Double = 60
    /// Hard limit for the attempt (what is left of the task's resource timeout).
    public var totalTimeout: Double?
    public var followRedirects = true
    public var maxRedirects = 16
    /// Admission order within a session: higher first, then by `sequence`.
    public var priority: Double = 0.5
    public var sequence: UInt64 = 0
    /// The digests to compute over the output file (from its first byte) while writing it; none
    /// when empty.
    public var digests: [DigestAlgorithm] = []
    /// Read the digests the final response declares (`DeclaredDigest`) and compute their
    /// algorithms too, for the caller to check against the file (an output file only).
    public var verifyOriginDigests = false
    /// Report checkpoints of the digests (`TransferObserver.transferCheckpointedDigests`), for a
    /// file that may be continued later.
    public var checkpointDigests = false
    /// Report once when the output file becomes worth a name for a restart (`PartialWorth`,
    /// `TransferObserver.transferPartialWorthKeeping`).
    public var reportsPartialWorth = false
    /// Where its body bytes are counted besides the engine's totals (nil: nowhere else).
    public var tally: ByteTally?
    /// How often the transport may send the request again by itself when a reused connection
    /// closed before any response to it (`RequestSends`); each re-send is in the outcome's
    /// `resends`. Unlimited keeps libcurl's own behaviour (at most 5).
    public var resendLimit = Int.max

    public init(label: String, session: String, url: String) {
        self.label = label
        self.session = session
        self.url = url
        hostKey = TransferSpec.hostKey(of: url)
    }

    private static func hostKey(of url: String) -> String { URLParts(url)?.hostKey ?? url }
}

/// Opens what a transfer reads and writes when the engine admits it, not when it is queued: a
/// transfer waiting for a slot holds no descriptor, so tens of thousands can wait behind a few
/// running ones.
public protocol TransferPreparer: Sendable {
    /// Called once as the transfer is admitted, before it takes a curl handle, on a thread of the
    /// engine's preparation queue (not the loop: the loop's other transfers go on meanwhile). The
    /// transfer holds its running slot until this returns, so it should not block for long
    /// (opening a file is fine, an fsync is not). The engine owns the returned descriptors as it
    /// owns a spec's. A failure ends the transfer with it, no request made; a transfer stopped
    /// while it waits is never prepared, and one stopped while it is prepared ends, not started,
    /// once this returns.
    func prepare() throws(TransferFailure) -> TransferFiles
}

/// A transfer's request body and output, and where a resumed output continues.
public struct TransferFiles: Sendable {
    public var body: RequestBodySource
    public var output: OutputTarget
    /// Continue a partial file: `Range: bytes=offset-` with `If-Range` (RFC 9110 §13.1.5).
    public var resume: ResumeRequest?
    /// Request header fields known only once the files are open (a digest of the body), sent
    /// after the spec's.
    public var headers: [(String, String)] = []
    /// With `resume`: the digests of the file's first bytes, to hash only the rest.
    public var digestCheckpoint: DigestCheckpoint?

    public init(body: RequestBodySource = .none, output: OutputTarget = .discard, resume: ResumeRequest? = nil) {
        self.body = body
        self.output = output
        self.resume = resume
    }
}

public struct ResumeRequest: Sendable, Equatable {
    public var offset: Int64
    /// An entity tag (strong) or an HTTP-date from Last-Modified, sent as `If-Range`.
    public var validator: String?

    public init(offset: Int64, validator: String?) {
        self.offset = offset
        self.validator = validator
    }
}

/// Where the request body comes from.
public enum RequestBodySource: Sendable {
    case none
    /// A small body held in memory (curl copies it).
    case bytes([UInt8])
    /// A body read piece by piece as curl sends it: bytes and file regions in order (a file, or a
    /// multipart body wrapped around one). The engine closes the segments' descriptors when done.
    case segments([BodySegment])

    var totalLength: Int64 {
        switch self {
        case .none: 0
        case .bytes(let b): Int64(b.count)
        case .segments(let s): s.reduce(0) { $0 + $1.length }
        }
    }
}

public enum BodySegment: Sendable {
    case bytes([UInt8])
    /// `length` bytes of an open file from `offset`, read with pread straight into curl's buffer.
    case file(fd: Int32, offset: Int64, length: Int64)

    var length: Int64 {
        switch self {
        case .bytes(let b): Int64(b.count)
        case .file(_, _, let length): length
        }
    }
}

/// Where the response body goes.
public enum OutputTarget: Sendable {
    case discard
    /// Kept in memory up to the transfer's `maxBodyBytes` (ephemeral sessions' data tasks).
    case memory
    /// Written to an open file from `offset` (the length of what a resumed file already holds).
    /// The engine owns the descriptor until the outcome is delivered; then the caller does.
    case file(fd: Int32, offset: Int64)
}
