import Digests
import JSON
import TransferVocabulary

/// A validated `POST …/tasks` body (one element of `tasks:batch`).
package struct TaskCreationRequest: Sendable {
    package var id: String?
    package var kind: TaskKind
    package var url: String
    package var method: String
    package var headers: [Header]
    package var body: BodySource?
    package var multipart: MultipartSpec?
    package var sendDigest: SendDigest?
    package var resumable: UploadResumable = .auto
    package var destination: String?
    package var checksum: Checksum?
    /// nil: the service's default (`--default-digests`).
    package var digests: [DigestAlgorithm]?
    /// `download.max_bytes`: the largest file the download may make; nil for no limit.
    package var maxBytes: Int64?
    package var priority: Double
    package var beginAt: Timestamp?
    package var description: String?
    package var start: Bool
    /// `resume_data` as given; `resumeFrom` once verified (`TaskCoordinator.resolveResumeData`).
    package var resumeToken: String?
    package var resumeFrom: ResumeData?
    /// The creating request's `traceparent` header, when valid (not a member of the body).
    package var traceparent: String?

    /// Every member is checked, each on its own, so that one reply names every field at fault;
    /// a rule between members is checked once the members it relates were read without fault.
    package static func parse(_ value: JSONValue, field: String) throws(Refusal) -> TaskCreationRequest {
        var r = try ObjectReader(value, path: field)
        var errors = FieldErrors()
        var kind: TaskKind?
        try errors.check { () throws(Refusal) in
            let text = try r.requiredString("kind")
            guard let known = TaskKind(rawValue: text) else {
                throw Refusal.invalid(r.field("kind"), "must be data, download or upload")
            }
            kind = known
        }
        var id: String?
        try errors.check { () throws(Refusal) in
            id = try r.string("id", maxLength: 200)
            if let id, !IdentifierValidation.isValid(id) {
                throw Refusal.invalid(r.field("id"), "must be 1–200 characters of A-Z a-z 0-9 . _ - (not . or ..)")
            }
        }
        var resumeToken: String?
        try errors.check { () throws(Refusal) in
            resumeToken = try r.string("resume_data", maxLength: 64 * 1024)
            if resumeToken != nil, let kind, kind != .download {
                throw Refusal.invalid(r.field("resume_data"), "is only for download tasks")
            }
        }
        var url = "", method = "GET", headers: [Header] = [], inlineBody: BodySource?
        var requestRead = false
        try errors.check { () throws(Refusal) in
            // A download made from resume data needs no request: the URL is in the data.
            var request = try r.object("request")
            if request == nil && resumeToken != nil { request = try ObjectReader(.object([]), path: "request") }
            guard var request else { throw Refusal.invalid(r.field("request"), "is required") }
            var inner = FieldErrors()
            try inner.check { () throws(Refusal) in
                url = try request.string("url", maxLength: 8192) ?? ""
                if resumeToken == nil || !url.isEmpty {
                    guard !url.isEmpty else { throw Refusal.invalid(request.field("url"), "is required") }
                    try validateURL(url, field: request.field("url"))
                }
            }
            try inner.check { () throws(Refusal) in
                method = try request.string("method", maxLength: 32) ?? (kind == .upload ? "PUT" : "GET")
                guard !method.isEmpty, method.utf8.allSatisfy(HeaderValidation.isTokenChar) else {
                    throw Refusal.invalid(request.field("method"), "is not a valid HTTP method")
                }
            }
            try inner.check { () throws(Refusal) in
                headers = try HeaderValidation.validate(try request.stringMap("headers") ?? [], field: request.field("headers"))
            }
            try inner.check { () throws(Refusal) in inlineBody = try parseBody(&request) }
            try inner.check { () throws(Refusal) in try request.finish() }
            try inner.finish()
            requestRead = true
        }
        var uploadBody: BodySource?, sendDigest: SendDigest?, resumable = UploadResumable.auto
        var uploadRead = false
        try errors.check { () throws(Refusal) in
            (uploadBody, sendDigest, resumable) = try parseUpload(&r)
            uploadRead = true
        }
        let body = inlineBody ?? uploadBody
        if requestRead && uploadRead {
            try errors.check { () throws(Refusal) in
                if inlineBody != nil && uploadBody != nil {
                    throw Refusal.invalid(r.field("upload"), "give the body either as request.body or as upload, not both")
                }
                if kind == .upload && body == nil {
                    throw Refusal.invalid(r.field("upload"), "an upload task needs upload.from_blob, upload.from_file, upload.from_task or request.body")
                }
            }
        }
        var multipart: MultipartSpec?
        try errors.check { () throws(Refusal) in
            multipart = try parseMultipart(&r)
            if multipart != nil && body == nil && requestRead && uploadRead {
                throw Refusal.invalid(r.field("multipart"), "multipart needs a body to wrap (upload or request.body)")
            }
        }
        var destination: String?, digests: [DigestAlgorithm]?, maxBytes: Int64?
        try errors.check { () throws(Refusal) in
            guard var d = try r.object("download") else { return }
            if let kind, kind != .download { throw Refusal.invalid(d.path, "is only for download tasks") }
            var inner = FieldErrors()
            try inner.check { () throws(Refusal) in destination = try d.string("destination", maxLength: 4096) }
            try inner.check { () throws(Refusal) in maxBytes = try d.integer("max_bytes", in: 1...(1 << 62)) }
            try inner.check { () throws(Refusal) in digests = try parseDigests(&d) }
            try inner.check { () throws(Refusal) in try d.finish() }
            try inner.finish()
        }
        var checksum: Checksum?
        try errors.check { () throws(Refusal) in
            guard let c = try r.object("checksum") else { return }
            if let kind, kind != .download { throw Refusal.invalid(c.path, "is only for download tasks") }
            checksum = try Checksum.parse(c)
        }
        var priority = 0.5
        try errors.check { () throws(Refusal) in priority = try r.number("priority", in: 0...1) ?? 0.5 }
        var beginAt: Timestamp?
        try errors.check { () throws(Refusal) in
            guard let text = try r.string("begin_at", maxLength: 64) else { return }
            guard let t = Timestamp(rfc3339: text) else {
                throw Refusal.invalid(r.field("begin_at"), "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z")
            }
            beginAt = t
        }
        var description: String?
        try errors.check { () throws(Refusal) in description = try r.string("description", maxLength: 4096) }
        var start = true
        try errors.check { () throws(Refusal) in start = try r.bool("start") ?? true }
        try errors.check { () throws(Refusal) in try r.finish() }
        try errors.finish()
        guard let kind else { preconditionFailure("a missing kind is a refusal above") }
        var created = TaskCreationRequest(id: id, kind: kind, url: url, method: method, headers: headers, body: body,
                                   multipart: multipart, sendDigest: sendDigest, destination: destination, checksum: checksum, digests: digests, maxBytes: maxBytes, priority: priority,
                                   beginAt: beginAt, description: description, start: start, resumeToken: resumeToken)
        created.resumable = resumable
        return created
    }

    /// `download.digests`: algorithm names, each known, none twice.
    private static func parseDigests(_ d: inout ObjectReader) throws(Refusal) -> [DigestAlgorithm]? {
        guard let names = try d.array("digests", maxCount: DigestAlgorithm.allCases.count) else { return nil }
        var strings: [String] = []
        for (i, item) in names.enumerated() {
            guard let s = item.stringValue else { throw Refusal.invalid(d.field("digests") + "[\(i)]", "must be a string") }
            strings.append(s)
        }
        return try DigestAlgorithm.parseList(strings, field: d.field("digests"))
    }

    /// Only absolute http and https URLs (every other scheme is `unsupported_url`), as curl parses them. `field` is
    /// built only for a complaint.
    static func validateURL(_ url: String, field: @autoclosure () -> String) throws(Refusal) {
        guard let parts = URLParts(url), !parts.host.isEmpty || !parts.isHTTP else {
            throw Refusal.invalid(field(), "is not a valid absolute URL", code: "bad_url")
        }
        guard parts.isHTTP else {
            throw Refusal.invalid(field(), "scheme \(parts.scheme) is not supported; only http and https", code: "unsupported_url")
        }
    }

    /// `request.body`: exactly one of `text`, `base64` (inline) or `blob`.
    private static func parseBody(_ request: inout ObjectReader) throws(Refusal) -> BodySource? {
        guard var b = try request.object("body") else { return nil }
        let text = try b.string("text", maxLength: 1 << 20)
        let base64 = try b.string("base64", maxLength: 4 << 20)
        let blob = try b.string("blob", maxLength: 64)
        try b.finish()
        switch (text, base64, blob) {
        case (let t?, nil, nil): return .inline(Array(t.utf8))
        case (nil, let e?, nil):
            guard let decoded = Base64.decode(e) else { throw Refusal.invalid(b.field("base64"), "is not valid base64") }
            return .inline(decoded)
        case (nil, nil, let id?): return .blob(id: id, owned: false)
        default:
            throw Refusal.invalid(b.path, "needs exactly one of text, base64 or blob")
        }
    }

    /// `upload`: exactly one of `from_blob`, `from_file` or `from_task`, whether to send the
    /// body's digest, and how the upload may be resumed.
    private static func parseUpload(_ r: inout ObjectReader) throws(Refusal) -> (BodySource?, SendDigest?, UploadResumable) {
        guard var u = try r.object("upload") else { return (nil, nil, .auto) }
        let blob = try u.string("from_blob", maxLength: 64)
        let file = try u.string("from_file", maxLength: 4096)
        let task = try u.string("from_task", maxLength: 200)
        let sendDigest = try SendDigest.parse(try u.string("send_digest", maxLength: 16), field: u.field("send_digest"))
        let resumable = try UploadResumable.parse(try u.string("resumable", maxLength: 16), field: u.field("resumable"))
        try u.finish()
        switch (blob, file, task) {
        case (let id?, nil, nil): return (.blob(id: id, owned: false), sendDigest, resumable)
        case (nil, let path?, nil): return (.file(path), sendDigest, resumable)
        case (nil, nil, let id?): return (.task(id), sendDigest, resumable)
        default: throw Refusal.invalid(u.path, "needs exactly one of from_blob, from_file or from_task")
        }
    }

    private static func parseMultipart(_ r: inout ObjectReader) throws(Refusal) -> MultipartSpec? {
        guard var m = try r.object("multipart") else { return nil }
        var spec = MultipartSpec()
        spec.field = try m.string("field", maxLength: 256) ?? "file"
        spec.filename = try m.string("filename", maxLength: 1024)
        spec.mimeType = try m.string("mime_type", maxLength: 256) ?? "application/octet-stream"
        guard spec.mimeType.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), spec.mimeType.contains("/") else {
            throw Refusal.invalid(m.field("mime_type"), "must be a media type such as image/jpeg")
        }
        let pairs = try m.stringMap("fields") ?? []
        guard pairs.count <= 256 else { throw Refusal.invalid(m.field("fields"), "has more than 256 fields") }
        spec.fields = pairs.map { Header(name: $0.0, value: $0.1) }
        try m.finish()
        return spec
    }
}
