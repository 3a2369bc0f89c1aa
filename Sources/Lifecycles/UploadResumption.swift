/// One upload that can be continued where the origin says it stands, as a value: which request goes
/// out next and what each answer makes of the upload. The caller sends `nextRequest` (the body from
/// `bodyFrom` on), reports interim responses as they come (`interimReceived`) and the end of each
/// exchange (`exchangeEnded`), and does what the returned action says; it persists the value
/// (`resource`, `offset`) when `interimReceived` or `exchangeEnded` changes them, so a restarted
/// process continues from the origin's offset.
///
/// Two protocols (`UploadResumption+IETF.swift`, `UploadResumption+Tus.swift`): the IETF
/// resumable upload draft (draft-ietf-httpbis-resumable-upload, interop version 8), which upgrades
/// the task's own request and learns the upload resource from a `104` interim response, and
/// tus 1.0.0, which creates the resource first with a `POST`. Both ask the resource for its offset
/// (`HEAD`) after an interruption and append the rest (`PATCH`). An exchange is never begun while
/// another is out: the caller sends one request at a time, so a `HEAD` never races an append
/// (the draft: a client must not send an offset retrieval request while an append is in flight).
public struct UploadResumption: Sendable, Equatable {
    public enum Dialect: String, Sendable, Equatable {
        case ietf, tus
    }

    /// A request to send: the body is the task's from `bodyFrom` to its end; none when nil.
    public struct Request: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// The task's request (IETF, the upload itself) or tus's creation `POST`.
            case create
            /// `HEAD`: where does the resource stand.
            case offset
            /// `PATCH`: the rest of the body.
            case append
        }

        public var kind: Kind
        public var method: String
        public var url: String
        public var headers: [Header]
        public var bodyFrom: Int64?

        public struct Header: Sendable, Equatable {
            public var name: String
            public var value: String
        }
    }

    /// A response as the machine needs it: its status, its fields by lower-cased name, and its
    /// `Location` already resolved against the request's URL.
    public struct Reply: Sendable, Equatable {
        public var status: Int
        public var fields: [String: String]
        public var location: String?

        public init(status: Int, fields: [String: String] = [:], location: String? = nil) {
            self.status = status
            self.fields = fields
            self.location = location
        }

        var uploadOffset: Int64? { fields["upload-offset"].flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil } }
        /// `Upload-Complete: ?1` (a structured-field boolean, RFC 9651 §3.3.6).
        var uploadComplete: Bool { fields["upload-complete"] == "?1" }
    }

    /// How one exchange ended: with a final response, or without one (the connection broke, a
    /// timeout) after sending `bodyBytesSent` body bytes.
    public enum Ending: Sendable, Equatable {
        case response(Reply, bodyBytesSent: Int64)
        case interrupted(bodyBytesSent: Int64)
    }

    public enum Action: Sendable, Equatable {
        /// Send `nextRequest` now.
        case sendNext
        /// Wait as the task's retry policy says, then send `nextRequest` (which asks for the offset).
        case retryLater
        /// The exchange's final response is the upload's: handle it as a plain upload's would be.
        case report
        /// The upload cannot be finished by resuming; the task fails with this reason.
        case fail(String)
    }

    /// Exchanges in a row that moved the confirmed offset nowhere before the machine gives up (an
    /// origin answering 409 or losing its resource forever would otherwise loop).
    public static let stallLimit = 8

    public let dialect: Dialect
    /// The task's request, which creates the upload (IETF: the upload itself).
    public let method: String
    public let url: String
    /// The length of the whole body.
    public let length: Int64
    /// The upload resource's URL, once the origin named one.
    public internal(set) var resource: String?
    /// What the origin confirmed holding.
    public internal(set) var offset: Int64 = 0
    /// The next exchange asks the resource for its offset first: after an interruption, or when
    /// continued by a new process.
    public internal(set) var needsOffset = false
    /// The furthest body byte ever sent, and the bytes sent more than once (`metrics.bytes_resent`).
    public internal(set) var sentThrough: Int64 = 0
    public internal(set) var bytesResent: Int64 = 0
    /// The exchange now out.
    var outstanding: Request?
    var stalls = 0

    public init(dialect: Dialect, method: String, url: String, length: Int64) {
        self.dialect = dialect
        self.method = method
        self.url = url
        self.length = length
    }

    /// Continues an upload a previous process (or a cancelled task's resume data) left at
    /// `resource`: the offset it confirmed is asked again, since the origin may have kept more,
    /// or less.
    public init(dialect: Dialect, method: String, url: String, length: Int64, resource: String?, offset: Int64,
                sentThrough: Int64 = 0, bytesResent: Int64 = 0) {
        self.init(dialect: dialect, method: method, url: url, length: length)
        self.resource = resource
        self.offset = resource == nil ? 0 : offset
        self.sentThrough = sentThrough
        self.bytesResent = bytesResent
        needsOffset = resource != nil
    }

    /// The request to send next.
    public var nextRequest: Request {
        switch dialect {
        case .ietf: ietfRequest
        case .tus: tusRequest
        }
    }

    /// Call as the request goes out: the machine then knows where its body starts.
    public mutating func requestSent(_ request: Request) {
        outstanding = request
    }

    /// An interim (1xx) response arrived. Returns true when it named the upload resource, which
    /// the caller then persists before the upload goes on.
    public mutating func interimReceived(_ reply: Reply) -> Bool {
        guard dialect == .ietf else { return false }
        return ietfInterim(reply)
    }

    /// The exchange now out ended: what to do next.
    public mutating func exchangeEnded(_ ending: Ending) -> Action {
        let before = offset
        let kind = outstanding?.kind ?? (needsOffset ? .offset : resource == nil ? .create : .append)
        countSent(ending)
        let action: Action
        switch (kind, ending, dialect) {
        case (.offset, .interrupted, _):
            action = .retryLater
        case (.append, .interrupted, _):
            needsOffset = true
            action = .retryLater
        case (.offset, .response(let reply, _), _):
            action = offsetAnswered(reply)
        case (.create, .interrupted, .ietf):
            action = ietfCreationCut()
        case (.create, .interrupted, .tus):
            // No resource yet: the task's retry policy decides, as for a plain upload.
            action = .report
        case (_, .response(let reply, _), .ietf):
            action = ietfAnswered(reply, to: kind)
        case (_, .response(let reply, _), .tus):
            action = kind == .create ? tusCreated(reply) : tusAppended(reply)
        }
        guard action == .sendNext || action == .retryLater else { return action }
        stalls = offset > before ? 0 : stalls + 1
        guard stalls <= UploadResumption.stallLimit else {
            return .fail("the upload made no progress in \(UploadResumption.stallLimit) exchanges with its upload resource")
        }
        return action
    }

    /// Body bytes sent beyond what was sent before count as new; the rest went twice.
    private mutating func countSent(_ ending: Ending) {
        defer { outstanding = nil }
        guard let from = outstanding?.bodyFrom else { return }
        let sent = switch ending {
        case .response(_, let bytes), .interrupted(let bytes): bytes
        }
        let end = from + max(0, sent)
        bytesResent += max(0, min(end, sentThrough) - from)
        sentThrough = max(sentThrough, end)
    }

    /// The resource is gone (404 or 410 when asked): the upload starts again from zero, with a new
    /// resource.
    mutating func restartFromZero() -> Action {
        resource = nil
        offset = 0
        needsOffset = false
        return .sendNext
    }

    /// The resource's answer to a `HEAD`: its offset, which may lie behind what it confirmed
    /// before (it kept less), never beyond the body's length. A resource gone (404, 410) starts
    /// the upload over; a 5xx is asked again later.
    private mutating func offsetAnswered(_ reply: Reply) -> Action {
        if UploadResumption.isGone(reply.status) { return restartFromZero() }
        if reply.status >= 500 { return .retryLater }
        guard (200..<300).contains(reply.status) else {
            return .fail("the upload resource answered HTTP \(reply.status) when asked for its offset")
        }
        // IETF: a complete upload takes no more appends, and its final response is gone with the
        // exchange that got it.
        if dialect == .ietf, reply.uploadComplete {
            return .fail("the upload resource says the upload is complete, but its final response was lost")
        }
        guard let reported = reply.uploadOffset, reported <= length else {
            return .fail("the upload resource answered HTTP \(reply.status) without a usable Upload-Offset")
        }
        offset = reported
        needsOffset = false
        // tus: all of it is there (the last PATCH's answer was lost), which is the upload's end.
        return dialect == .tus && offset == length ? .report : .sendNext
    }

    /// The body from the confirmed offset is there to send, or all of it went.
    func request(_ kind: Request.Kind, _ method: String, _ url: String, _ headers: [(String, String)],
                 bodyFrom: Int64? = nil) -> Request {
        Request(kind: kind, method: method, url: url,
                headers: headers.map { Request.Header(name: $0.0, value: $0.1) }, bodyFrom: bodyFrom)
    }

    static func isGone(_ status: Int) -> Bool { status == 404 || status == 410 }
}
