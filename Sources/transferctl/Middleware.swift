import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Adds the bearer token to every call and turns every answer ≥ 400 into a `Failure` carrying the
/// problem document's code and detail, so each command handles only the success it expects.
/// The bytes of each successful JSON reply go to `replies`, if given, on their way through.
struct APIMiddleware: ClientMiddleware {
    let token: String?
    let replies: Replies?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let token { request.headerFields[.authorization] = "Bearer \(token)" }
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status.code >= 400 else { return (response, try await recorded(response, responseBody, operationID)) }
        var data = Data()
        if let responseBody { data = try await Data(collecting: responseBody, upTo: 1 << 20) }
        throw Failure.forResponse(status: response.status.code, body: data)
    }

    /// A JSON reply's body, read whole (it is one object, bounded) and handed on as the same
    /// bytes; other bodies (the event stream, files) pass untouched.
    private func recorded(_ response: HTTPResponse, _ body: HTTPBody?, _ operationID: String) async throws -> HTTPBody? {
        guard let replies, let body, response.headerFields[.contentType]?.hasPrefix("application/json") == true else { return body }
        let bytes = try await [UInt8](collecting: body, upTo: 64 << 20)
        replies.record(bytes, operation: operationID)
        return HTTPBody(bytes)
    }
}
