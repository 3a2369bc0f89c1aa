import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Adds the bearer token to every call and turns every answer ≥ 400 into a `Failure` carrying the
/// problem document's code and detail, so each command handles only the success it expects.
struct APIMiddleware: ClientMiddleware {
    let token: String?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let token { request.headerFields[.authorization] = "Bearer \(token)" }
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status.code >= 400 else { return (response, responseBody) }
        var data = Data()
        if let responseBody { data = try await Data(collecting: responseBody, upTo: 1 << 20) }
        throw Failure.forResponse(status: response.status.code, body: data)
    }
}
