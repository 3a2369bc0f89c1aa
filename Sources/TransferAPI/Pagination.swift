import HTTPServer
import JSON
import TransferModel

/// How every list pages: `limit` items (1…1000, default 100) `after` an opaque cursor, the reply's
/// `next` the cursor of the page after (null on the last). A cursor is the base64url of the sort
/// key the list resumes after, so clients cannot come to depend on what it holds.
enum Pagination {
    static func limit(_ request: HTTPRequest) throws(Refusal) -> Int {
        guard let text = request.query("limit") else { return 100 }
        guard let n = Int(text), (1...1000).contains(n) else {
            throw Refusal(.malformed, "invalid_parameter", "limit must be a whole number from 1 to 1000", field: "limit")
        }
        return n
    }

    /// The sort key `after` names, or nil without one.
    static func after(_ request: HTTPRequest) throws(Refusal) -> String? {
        guard let text = request.query("after") else { return nil }
        var base64 = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard !text.contains("="), let bytes = Base64.decode(base64), let key = String(validating: bytes, as: UTF8.self) else {
            throw Refusal(.malformed, "invalid_parameter", "after must be the next cursor of a page before", field: "after")
        }
        return key
    }

    /// The cursor for resuming after `key`.
    static func cursor(_ key: String) -> String {
        String(Base64.encode(Array(key.utf8)).compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 })
    }

    /// `"next"`: the cursor after the last item shown, when there are more.
    static func writeNext(_ lastKey: String?, into json: inout JSONWriter) {
        json.key("next"); json.optionalString(lastKey.map(cursor))
    }
}

extension Pagination {
    /// `after` for lists ordered by a whole-number position (tasks, delivery attempts); 0 from the start.
    static func afterPosition(_ request: HTTPRequest) throws(Refusal) -> Int64 {
        guard let key = try after(request) else { return 0 }
        guard let n = Int64(key), n >= 0 else {
            throw Refusal(.malformed, "invalid_parameter", "after must be the next cursor of a page before", field: "after")
        }
        return n
    }
}
