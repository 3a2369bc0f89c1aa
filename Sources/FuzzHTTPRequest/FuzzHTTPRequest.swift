import FuzzSupport
import HTTPServer

/// A connection's bytes as the server reads them: HeadScanner finds the head, RequestHeadParser
/// parses it, BodyDecoder decodes the body that follows (Content-Length or chunked). The first
/// input byte sets the size of the pieces the bytes arrive in; the rest is the connection.
///
/// Properties: reading in pieces gives the same outcome as reading at once (head length, leading
/// empty lines, body bytes, bytes consumed), since a server reads whatever the socket had; every
/// count stays within the input; the body delivered is exactly `received` bytes.
@main enum FuzzHTTPRequest {
    static func main() {
        fuzzMain { input in
            guard let first = input.first else { return }
            let step = Int(first % 64) + 1
            let bytes = UnsafeRawBufferPointer(rebasing: input.dropFirst())
            let whole = readHead(bytes, step: bytes.count)
            fuzzCheck(whole == readHead(bytes, step: step), "head read in pieces of \(step) differs from read at once")
            guard case .head(let end, let leading) = whole else { return }
            fuzzCheck(leading <= end && end <= bytes.count, "head \(leading)..<\(end) outside \(bytes.count) bytes")
            let head: HTTPRequestHead
            do throws(HTTPProblem) {
                head = try RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: bytes[leading..<end]))
            } catch { return }
            fuzzCheck(head.target.utf8.count <= end - leading, "target longer than the head")
            let rest = UnsafeRawBufferPointer(rebasing: bytes[end...])
            let body = decodeBody(rest, head.framing, step: rest.count)
            fuzzCheck(body == decodeBody(rest, head.framing, step: step), "body decoded in pieces of \(step) differs")
        }
    }

    enum HeadOutcome: Equatable { case head(end: Int, leading: Int), incomplete, refused }

    /// Feeds the scanner growing prefixes, `step` bytes more each time, as reads arrive.
    static func readHead(_ bytes: UnsafeRawBufferPointer, step: Int) -> HeadOutcome {
        var scanner = HeadScanner(maxRequestLine: 1024, maxHeaderBytes: 4096)
        var available = 0
        repeat {
            available = min(bytes.count, available + max(step, 1))
            do throws(HTTPProblem) {
                if let end = try scanner.scan(UnsafeRawBufferPointer(rebasing: bytes[..<available])) {
                    return .head(end: end, leading: scanner.leadingBytes)
                }
            } catch { return .refused }
        } while available < bytes.count
        return .incomplete
    }

    struct BodyOutcome: Equatable {
        var consumed = 0
        var delivered: [UInt8] = []
        var complete = false
        var refused = false
    }

    /// Decodes `bytes` handed over `step` at a time, stopping where the body ends.
    static func decodeBody(_ bytes: UnsafeRawBufferPointer, _ framing: BodyFraming, step: Int) -> BodyOutcome {
        var decoder = BodyDecoder(framing, maxTrailerBytes: 1024)
        var outcome = BodyOutcome()
        while outcome.consumed < bytes.count && !decoder.isComplete {
            let piece = UnsafeRawBufferPointer(rebasing: bytes[outcome.consumed..<min(bytes.count, outcome.consumed + max(step, 1))])
            do throws(HTTPProblem) {
                let n = try decoder.decode(piece) { outcome.delivered += $0 }
                fuzzCheck(n <= piece.count, "consumed \(n) of \(piece.count) bytes")
                outcome.consumed += n
                if n < piece.count { fuzzCheck(decoder.isComplete, "stopped short of an incomplete body"); break }
            } catch {
                // What earlier pieces consumed no longer matters: a refusal closes the connection.
                outcome.refused = true
                outcome.consumed = 0
                break
            }
        }
        fuzzCheck(decoder.received == outcome.delivered.count, "received \(decoder.received), delivered \(outcome.delivered.count)")
        outcome.complete = decoder.isComplete
        return outcome
    }
}
