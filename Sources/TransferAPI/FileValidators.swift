import Glibc
import HTTPServer
import TransferModel

/// What names a served file's content (`ETag`, `Last-Modified`) and the conditional requests
/// judged against it (RFC 9110 §13), as a static file server answers them.
struct FileValidators {
    /// Strong: inode, size and modification time to the nanosecond change whenever the file's
    /// bytes can have changed (a file replaced by rename gets another inode).
    let etag: String
    let lastModified: String
    private let modifiedSeconds: Int64

    init(_ st: stat) {
        let nanoseconds = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        etag = "\"" + [UInt64(st.st_ino), UInt64(st.st_size), UInt64(bitPattern: nanoseconds)]
            .map { String($0, radix: 16) }.joined(separator: "-") + "\""
        modifiedSeconds = Int64(st.st_mtim.tv_sec)
        lastModified = HTTPDate.format(modifiedSeconds)
    }

    var headers: [(String, String)] { [("ETag", etag), ("Last-Modified", lastModified), ("Accept-Ranges", "bytes")] }

    /// §13.2.2: `If-None-Match` (weak comparison, `*` for any) decides when present; otherwise
    /// `If-Modified-Since`, whose date must not be before the file's last change.
    func notModified(_ request: HTTPRequest) -> Bool {
        if let tags = request.headers["if-none-match"] {
            return tags.split(separator: ",").contains { candidate in
                let tag = candidate.trimmingCharacters()
                return tag == "*" || (tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag) == etag
            }
        }
        guard let since = request.headers["if-modified-since"].flatMap(HTTPDate.parse) else { return false }
        return modifiedSeconds * 1000 <= since.milliseconds
    }

    /// §13.1.5: a `Range` applies only while `If-Range` names the current content — the strong
    /// ETag, or the exact `Last-Modified` date; otherwise the whole file is sent.
    func rangeApplies(_ request: HTTPRequest) -> Bool {
        guard let condition = request.headers["if-range"]?.trimmingCharacters() else { return true }
        if condition.hasPrefix("\"") { return condition == etag }
        if condition.hasPrefix("W/") { return false }
        guard let date = HTTPDate.parse(condition) else { return false }
        return date.milliseconds == modifiedSeconds * 1000
    }
}
