import Foundation
import OpenAPIRuntime

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why transferctl stops short of success, each with the exit code scripts test for.
enum Failure: Error, CustomStringConvertible {
    /// A task completed with an error, or its origin answered ≥ 400 (exit 1).
    case taskFailed(String)
    /// transferd refused the call for another reason than authorisation (exit 1).
    case api(status: Int, detail: String)
    /// Bad arguments found after parsing (exit 2).
    case usage(String)
    /// No answer from transferd at all (exit 3).
    case unreachable(String)
    /// 401 or 403 (exit 4).
    case unauthorised(status: Int, detail: String)
    /// Ctrl-C while waiting; the tasks keep running in transferd (exit 130).
    case interrupted(tasks: [String])

    var exitCode: Int32 {
        switch self {
        case .taskFailed, .api: 1
        case .usage: 2
        case .unreachable: 3
        case .unauthorised: 4
        case .interrupted: 130
        }
    }

    var description: String {
        switch self {
        case .taskFailed(let message): message
        case .api(let status, let detail): "transferd answered \(status): \(detail)"
        case .usage(let message): message
        case .unreachable(let detail): "transferd is unreachable: \(detail)"
        case .unauthorised(let status, let detail): "not allowed (\(status)): \(detail)"
        case .interrupted(let tasks):
            "interrupted; still running in transferd — re-attach with: transferctl wait \(tasks.joined(separator: " "))"
        }
    }

    /// The failure an error from the generated client (or the stream reader) stands for: the
    /// runtime wraps what the transport and the middleware throw in a ClientError.
    static func from(_ error: any Error) -> Failure? {
        if let failure = error as? Failure { return failure }
        if let clientError = error as? ClientError { return from(clientError.underlyingError) }
        if let urlError = error as? URLError { return .unreachable(urlError.localizedDescription) }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain { return .unreachable(nsError.localizedDescription) }
        return nil
    }

    /// What a problem document says, or the body itself when it is not one.
    static func forResponse(status: Int, body: Data) -> Failure {
        var detail = String(decoding: body.prefix(2000), as: UTF8.self)
        if let problem = try? JSONSerialization.jsonObject(with: body) as? [String: Any] {
            let code = problem["code"] as? String ?? ""
            let text = problem["detail"] as? String ?? problem["title"] as? String ?? ""
            detail = [code, text].filter { !$0.isEmpty }.joined(separator: ": ")
            if let errors = problem["errors"] as? [[String: Any]] {
                detail += errors.map { "\n  \($0["field"] as? String ?? ""): \($0["detail"] as? String ?? "")" }.joined()
            }
        }
        return status == 401 || status == 403 ? .unauthorised(status: status, detail: detail) : .api(status: status, detail: detail)
    }
}
