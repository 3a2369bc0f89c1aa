import HTTPServer

/// A request the API refuses: an RFC 9457 problem document with our stable `code`, and for
/// validation failures the `field` at fault (a path such as `tasks[2].request.url`).
struct APIError: Error, Sendable {
    let status: Int
    let code: String
    let detail: String
    var field: String?

    init(_ status: Int, _ code: String, _ detail: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.detail = detail
        self.field = field
    }

    /// 422 for a field whose value is wrong.
    static func invalid(_ field: String, _ detail: String, code: String = "validation_failed") -> APIError {
        APIError(422, code, "\(field): \(detail)", field: field)
    }

    static func notFound(_ what: String) -> APIError { APIError(404, "not_found", "\(what) does not exist") }

    var response: HTTPResponse {
        var json = JSONWriter()
        json.beginObject()
        json.key("type"); json.string("urn:transferd:problem:\(code)")
        json.key("title"); json.string(HTTPStatus.reason(status))
        json.key("status"); json.int(status)
        json.key("detail"); json.string(detail)
        json.key("code"); json.string(code)
        if let field { json.key("field"); json.string(field) }
        json.endObject()
        return HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", "application/problem+json")]),
                            body: .bytes(json.bytes))
    }
}
