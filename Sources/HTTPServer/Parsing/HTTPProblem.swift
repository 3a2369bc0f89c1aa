/// A request answered with an RFC 9457 problem document instead of reaching (or leaving) a
/// handler: malformed framing, a limit exceeded, a body a sink refused. `code` is the stable
/// machine-readable name clients switch on.
public struct HTTPProblem: Error, Equatable, Sendable {
    public let status: Int
    public let code: String
    public let detail: String

    public init(_ status: Int, _ code: String, _ detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    public static func bad(_ detail: String) -> HTTPProblem { HTTPProblem(400, "bad_request", detail) }
}
