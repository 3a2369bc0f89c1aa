import HTTPServer
import JSON
import TransferCore
import TransferModel

/// Where a refusal becomes HTTP: its status, and the problem document (RFC 9457) that carries it,
/// with every field at fault in `errors` (the connection adds `instance`, the request id).
extension Refusal {
    var status: Int {
        switch reason {
        case .malformed: 400
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .gone: 410
        case .unsupportedMediaType: 415
        case .rangeNotSatisfiable: 416
        case .preconditionFailed: 412
        case .tooMany: 429
        case .invalid: 422
        case .internalError: 500
        case .unavailable: 503
        case .insufficientStorage: 507
        }
    }

    var response: HTTPResponse {
        var json = JSONWriter()
        json.beginObject()
        json.key("type"); json.string("urn:transferd:problem:\(code)")
        json.key("title"); json.string(HTTPStatus.reason(status))
        json.key("status"); json.int(status)
        json.key("detail"); json.string(detail)
        json.key("code"); json.string(code)
        if let field { json.key("field"); json.string(field) }
        json.key("errors"); json.beginArray()
        for error in fieldErrors {
            json.beginObject()
            json.key("field"); json.string(error.field)
            json.key("code"); json.string(error.code)
            json.key("detail"); json.string(error.detail)
            json.endObject()
        }
        json.endArray()
        json.endObject()
        var headers = HTTPHeaders([("Content-Type", "application/problem+json")])
        // RFC 9110 §10.2.3: a 503 may say when to try again. A store outage is one a client waits
        // out: without the field it could take the answer for a verdict on what it asked for.
        if reason == .unavailable { headers.add("Retry-After", String(Refusal.unavailableRetryAfter)) }
        return HTTPResponse(status: status, headers: headers, body: .bytes(json.bytes))
    }

    /// Seconds a client is asked to wait before retrying a request the store could not serve.
    static let unavailableRetryAfter = 1
}
