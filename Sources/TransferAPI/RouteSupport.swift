import HTTPServer
import JSON
import TransferModel

/// Small pieces every API route uses: reading JSON bodies, answering with JSON or a problem.
enum RouteSupport {
    /// The request body as a JSON value: 415 for a declared type that cannot be JSON, 400 for
    /// malformed JSON. `curl -d` labels its body application/x-www-form-urlencoded whatever it
    /// holds, so that label (and text/plain) is read as JSON too: operators type `curl -d '{…}'`.
    static func jsonBody(_ request: HTTPRequest, required: Bool = true) throws(Refusal) -> JSONValue? {
        if let type = request.headers["content-type"] {
            let mime = type.split(separator: ";").first.map { $0.trimmingCharacters().lowercased() } ?? ""
            let accepted = ["application/json", "application/x-www-form-urlencoded", "text/plain", ""]
            guard accepted.contains(mime) || mime.hasSuffix("+json") else {
                throw Refusal(.unsupportedMediaType, "unsupported_media_type", "the body must be application/json, not \(mime)")
            }
        }
        if request.body.isEmpty {
            if required { throw Refusal(.malformed, "invalid_json", "a JSON body is required") }
            return nil
        }
        do {
            return try JSONParser.parse(request.body)
        } catch {
            throw Refusal(.malformed, error.tooDeep ? "json_too_deep" : error.tooComplex ? "json_too_complex" : "invalid_json",
                          "the body is not valid JSON: \(error.message) at byte \(error.offset)")
        }
    }

    static func json(_ status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), _ build: (inout JSONWriter) -> Void) -> HTTPResponse {
        var json = JSONWriter(capacity: 1024)
        build(&json)
        return .json(json.bytes, status: status, headers: headers)
    }

    /// Runs a handler body that either answers or throws an `Refusal`.
    static func answer(_ responder: Responder, _ body: () throws(Refusal) -> Void) {
        do {
            try body()
        } catch {
            responder.respond(error.response)
        }
    }

    /// Query parameters must be ones the route knows.
    static func checkQuery(_ request: HTTPRequest, allowed: Set<String>) throws(Refusal) {
        for name in request.queryNames where !allowed.contains(name) {
            throw Refusal(.invalid, "unknown_parameter", "unknown query parameter \(name)", field: name)
        }
    }

    /// The identifier path parameter, checked.
    static func identifier(_ request: HTTPRequest) throws(Refusal) -> String {
        let id = request.parameters["identifier"] ?? ""
        guard IdentifierValidation.isValid(id) else {
            throw Refusal(.invalid, "validation_failed",
                           "session identifiers are 1–200 characters of A-Z a-z 0-9 . _ - (not . or ..)", field: "identifier")
        }
        return id
    }
}
