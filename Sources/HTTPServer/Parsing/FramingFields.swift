/// Content-Length and Transfer-Encoding as received, resolved into one unambiguous framing
/// (RFC 9112 §6.1–6.3). Anything a proxy in front of us might read differently is refused.
struct FramingFields {
    var contentLength: Int?
    var transferEncodings: [String] = []
    var hostCount = 0

    /// Each Content-Length line may hold a list (RFC 9110 §8.6); every member must be 1*DIGIT and all
    /// must agree. `+5`, `0x10`, `1 0` and differing duplicates are refused.
    mutating func addContentLength(_ value: String) throws(HTTPProblem) {
        for member in value.split(separator: ",", omittingEmptySubsequences: false) {
            let digits = member.trimmingWhitespace()
            guard !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy(CharacterClass.isDigit),
                  let n = Int(digits)
            else { throw .bad("malformed Content-Length") }
            if let existing = contentLength, existing != n { throw .bad("differing Content-Length values") }
            contentLength = n
        }
    }

    func resolve(minor: Int) throws(HTTPProblem) -> BodyFraming {
        if transferEncodings.isEmpty { return .length(contentLength ?? 0) }
        guard contentLength == nil else {
            throw .bad("both Content-Length and Transfer-Encoding")
        }
        guard minor >= 1 else { throw .bad("Transfer-Encoding in an HTTP/1.0 request") }
        let codings = transferEncodings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingWhitespace().lowercased() }
        guard codings == ["chunked"] else {
            throw .bad("Transfer-Encoding other than chunked")
        }
        return .chunked
    }
}
