import FuzzSupport
import TransferModel

/// Resume data tokens, which clients hand back to create a download. Two inputs in one target,
/// chosen by the first byte:
/// - a token to parse: whatever is accepted must carry a valid signature, so it re-issues as a
///   token that parses to the same data (a forged token is never accepted, and the fuzzer
///   cannot forge one: only the seeds' real tokens pass);
/// - fields to issue a token from (split at NUL bytes): any strings, however hostile, round-trip.
@main enum FuzzResumeData {
    static let key = Array("fuzz-resume-key-0123456789abcdef".utf8)

    static func main() {
        fuzzMain { input in
            guard let mode = input.first else { return }
            let rest = Array(input.dropFirst())
            if mode & 1 == 0 {
                guard let data = try? ResumeData.parse(String(decoding: rest, as: UTF8.self), key: key) else { return }
                fuzzCheck((try? ResumeData.parse(data.token(key: key), key: key)) == data, "re-issued token differs")
                fuzzCheck((try? ResumeData.parse(data.token(key: key), key: Array("other".utf8))) == nil,
                          "token accepted under another key")
            } else {
                let parts = rest.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
                func part(_ i: Int) -> String { i < parts.count ? parts[i] : "" }
                let data = ResumeData(url: part(0), validator: part(1), offset: Int64(rest.count), partial: part(2),
                                      destination: parts.count > 3 ? part(3) : nil, origin: part(4))
                fuzzCheck((try? ResumeData.parse(data.token(key: key), key: key)) == data, "issued token does not round-trip")
            }
        }
    }
}
