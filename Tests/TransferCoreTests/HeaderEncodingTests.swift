import Testing
@testable import JSON
@testable import TransferModel

/// How header fields become a JSON object: repeats joined in first-seen order, on both the short
/// path (a usual head, names compared pairwise) and the long one (many fields, names hashed).
struct HeaderEncodingTests {
    private func encoded(_ headers: [Header], hiding listed: [String]? = nil) -> String {
        var json = JSONWriter()
        TaskRecord.encodeHeaders(headers, hiding: listed, into: &json)
        return String(decoding: json.bytes, as: UTF8.self)
    }

    @Test func repeatedFieldsAreJoinedInFirstSeenOrder() {
        let headers = [Header(name: "set-cookie", value: "a=1"), Header(name: "etag", value: "\"x\""),
                       Header(name: "set-cookie", value: "b=2"), Header(name: "vary", value: "accept"),
                       Header(name: "set-cookie", value: "c=3")]
        #expect(encoded(headers) == #"{"set-cookie":"a=1, b=2, c=3","etag":"\"x\"","vary":"accept"}"#)
    }

    @Test func manyFieldsTakeTheHashedPathWithTheSameResult() {
        // 40 distinct names and a repeat of the first at the end: past the pairwise scan's reach.
        var headers = (0..<40).map { Header(name: "x-f\($0)", value: "\($0)") }
        headers.append(Header(name: "x-f0", value: "again"))
        let expected = "{" + (0..<40).map { $0 == 0 ? #""x-f0":"0, again""# : #""x-f\#($0)":"\#($0)""# }.joined(separator: ",") + "}"
        #expect(encoded(headers) == expected)
        // The same fields cut to a usual head give the same prefix: both paths agree.
        let short = Array(headers[0..<10]) + [headers[40]]
        #expect(encoded(short) == "{" + (0..<10).map { $0 == 0 ? #""x-f0":"0, again""# : #""x-f\#($0)":"\#($0)""# }.joined(separator: ",") + "}")
    }

    @Test func sensitiveValuesAreHiddenOnlyWhenAsked() {
        let headers = [Header(name: "Authorization", value: "Bearer s3cret"), Header(name: "X-Api-Key", value: "k"),
                       Header(name: "Accept", value: "*/*")]
        #expect(encoded(headers, hiding: ["x-api-key"]) == #"{"Authorization":"<redacted>","X-Api-Key":"<redacted>","Accept":"*/*"}"#)
        #expect(encoded(headers) == #"{"Authorization":"Bearer s3cret","X-Api-Key":"k","Accept":"*/*"}"#)
    }

    @Test func anEmptyHeadIsAnEmptyObject() {
        #expect(encoded([]) == "{}")
    }
}
