import Testing
@testable import JSON
@testable import TransferCore
@testable import TransferModel
import TransferVocabulary

func creation(_ json: String) throws(Refusal) -> TaskCreationRequest {
    try TaskCreationRequest.parse(try! JSONParser.parse(Array(json.utf8)), field: "")
}

func refusal(_ json: String) -> Refusal? {
    do {
        _ = try creation(json)
        return nil
    } catch {
        return error
    }
}

struct TaskCreationValidationTests {
    @Test func acceptsAFullDownload() throws {
        let r = try creation(#"""
            {"kind": "download", "id": "a.b-c_1", "request": {"url": "https://example.com/x?y=1", "headers": {"X-A": "b"}},
             "download": {"destination": "/srv/x"}, "checksum": {"sha256": "\#(String(repeating: "ab", count: 32))"},
             "priority": 0.9, "begin_at": "2030-01-01T00:00:00Z", "description": "d", "start": false}
            """#)
        #expect(r.kind == .download && r.id == "a.b-c_1" && r.destination == "/srv/x" && r.priority == 0.9 && !r.start)
        #expect(r.headers == [Header(name: "X-A", value: "b")])
    }

    /// (body, expected field, expected code)
    static let refusals: [(String, String, String)] = [
        (#"{"request": {"url": "http://x/"}}"#, "kind", "validation_failed"),
        (#"{"kind": "ftp", "request": {"url": "http://x/"}}"#, "kind", "validation_failed"),
        (#"{"kind": "data"}"#, "request", "validation_failed"),
        (#"{"kind": "data", "request": {}}"#, "request.url", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "not a url"}}"#, "request.url", "bad_url"),
        (#"{"kind": "data", "request": {"url": "file:///etc/passwd"}}"#, "request.url", "unsupported_url"),
        (#"{"kind": "data", "request": {"url": "gopher://example.com/"}}"#, "request.url", "unsupported_url"),
        (#"{"kind": "data", "request": {"url": "http://x/", "headers": {"X-A": "a\r\nX-B: b"}}}"#, "request.headers.X-A", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/", "headers": {"X-A": "a\u0000"}}}"#, "request.headers.X-A", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/", "headers": {"Bad Name": "a"}}}"#, "request.headers.Bad Name", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/", "headers": {"Host": "evil"}}}"#, "request.headers.Host", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/", "headers": {"X-A": 1}}}"#, "request.headers.X-A", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/", "method": "GE T"}}"#, "request.method", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/", "body": {"text": "a", "base64": "YQ=="}}}"#, "request.body", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/", "body": {"base64": "!!"}}}"#, "request.body.base64", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/"}, "priority": 2}"#, "priority", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/"}, "begin_at": "tomorrow"}"#, "begin_at", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/"}, "id": ".."}"#, "id", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/"}, "id": "a/b"}"#, "id", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/"}, "download": {"destination": "/x"}}"#, "download", "validation_failed"),
        (#"{"kind": "download", "request": {"url": "http://x/"}, "checksum": {"sha256": "abc"}}"#, "checksum.sha256", "validation_failed"),
        (#"{"kind": "data", "request": {"url": "http://x/"}, "colour": "red"}"#, "colour", "unknown_field"),
        (#"{"kind": "data", "request": {"url": "http://x/", "timeout": 1}}"#, "request.timeout", "unknown_field"),
        (#"["not", "an", "object"]"#, "body", "validation_failed"),
    ]

    @Test(arguments: refusals)
    func refusesNamingTheField(_ vector: (String, String, String)) {
        let error = refusal(vector.0)
        #expect(error?.reason == .invalid, "\(vector.0)")
        #expect(error?.field == vector.1, "\(vector.0): \(String(describing: error))")
        #expect(error?.code == vector.2, "\(vector.0): \(String(describing: error))")
    }
}

struct SessionConfigurationValidationTests {
    func parse(_ json: String) throws(Refusal) -> SessionConfiguration {
        try SessionConfiguration.parse(try! JSONParser.parse(Array(json.utf8)))
    }

    @Test func defaults() throws {
        let c = try parse("{}")
        #expect(c.timeoutRequest == 60 && c.timeoutResource == 604_800 && c.maxConnectionsPerHost == 6 && c.maxConcurrentTasks == 64)
        #expect(c.redirects == SessionConfiguration.Redirects(follow: true, max: 16))
        #expect(c.waitsForConnectivity(mode: .background) && !c.waitsForConnectivity(mode: .default))
        #expect(c.retry.methods == ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"])
    }

    @Test func retryMethodsAreKeptAsGivenAndEncodedBack() throws {
        let c = try parse(#"{"retry": {"methods": ["GET", "POST", "PATCH"]}}"#)
        #expect(c.retry.methods == ["GET", "POST", "PATCH"])
        #expect(c.retry.retries("POST") && !c.retry.retries("post") && !c.retry.retries("DELETE"))
        var json = JSONWriter()
        c.encode(into: &json, mode: .default)
        #expect(try parse(String(decoding: json.bytes, as: UTF8.self)).retry.methods == ["GET", "POST", "PATCH"])
        #expect(try parse(#"{"retry": {"methods": []}}"#).retry.methods.isEmpty)
    }

    /// The values of sensitive headers read `<redacted>` wherever the API shows them, and are
    /// kept as given where they are sent from (the stored document).
    @Test func sensitiveHeadersAreHiddenWhereShown() throws {
        let c = try parse(#"{"sensitive_headers": ["X-Api-Key"], "headers": {"X-Api-Key": "k1", "Accept": "*/*"}}"#)
        #expect(c.sensitiveHeaders == ["x-api-key"])
        var echo = JSONWriter()
        c.encode(into: &echo, mode: .default)
        let shown = try JSONParser.parse(echo.bytes)
        #expect(shown["headers"]?["X-Api-Key"]?.stringValue == "<redacted>")
        #expect(shown["headers"]?["Accept"]?.stringValue == "*/*")

        var task = TaskRecord(session: "s", id: "t", sequence: 1, kind: .data, url: "https://example.com/", method: "GET",
                              createdAt: Timestamp(milliseconds: 0))
        task.headers = [Header(name: "authorization", value: "Bearer b1"), Header(name: "X-API-KEY", value: "k1"),
                        Header(name: "Accept", value: "*/*")]
        task.sensitiveHeaders = c.sensitiveHeaders
        let reply = try JSONParser.parse(task.jsonBytes())
        #expect(reply["request"]?["headers"]?["authorization"]?.stringValue == "<redacted>")
        #expect(reply["request"]?["headers"]?["X-API-KEY"]?.stringValue == "<redacted>")
        #expect(reply["request"]?["headers"]?["Accept"]?.stringValue == "*/*")
        let stored = String(decoding: task.storageDocument(), as: UTF8.self)
        #expect(stored.contains("Bearer b1") && stored.contains("k1"))
    }

    static let refusals: [(String, String)] = [
        (#"{"timeout_request_s": 0}"#, "configuration.timeout_request_s"),
        (#"{"max_connections_per_host": "six"}"#, "configuration.max_connections_per_host"),
        (#"{"max_concurrent_tasks": 1.5}"#, "configuration.max_concurrent_tasks"),
        (#"{"cookies": {"accept": "sometimes"}}"#, "configuration.cookies.accept"),
        (#"{"credentials": [{"host": "h", "scheme": "ntlm"}]}"#, "configuration.credentials[0].scheme"),
        (#"{"credentials": [{"host": "h", "scheme": "basic", "username": "u"}]}"#, "configuration.credentials[0].password"),
        (#"{"retry": {"on_http_status": [200]}}"#, "configuration.retry.on_http_status[0]"),
        (#"{"retry": {"backoff_initial_s": 10, "backoff_max_s": 1}}"#, "configuration.retry.backoff_initial_s"),
        (#"{"retry": {"methods": "POST"}}"#, "configuration.retry.methods"),
        (#"{"retry": {"methods": ["GET", "PO ST"]}}"#, "configuration.retry.methods[1]"),
        (#"{"retry": {"methods": [""]}}"#, "configuration.retry.methods[0]"),
        (#"{"retry": {"methods": [1]}}"#, "configuration.retry.methods[0]"),
        (#"{"proxy": {"url": "ftp://p"}}"#, "configuration.proxy.url"),
        (#"{"tls": {"pinned_public_key": "md5//x"}}"#, "configuration.tls.pinned_public_key"),
        (#"{"tls": {"client_cert_file": "/c"}}"#, "configuration.tls.client_key_file"),
        (#"{"headers": {"X": "a\nb"}}"#, "configuration.headers.X"),
        (#"{"sensitive_headers": "x-api-key"}"#, "configuration.sensitive_headers"),
        (#"{"sensitive_headers": ["x-api-key", "no spaces"]}"#, "configuration.sensitive_headers[1]"),
        (#"{"headers": {"Cookie": "<redacted>"}}"#, "configuration.headers.Cookie"),
        (#"{"headers": {"X-Key": "<redacted>"}, "sensitive_headers": ["x-key"]}"#, "configuration.headers.X-Key"),
        (#"{"unknown": 1}"#, "configuration.unknown"),
    ]

    @Test(arguments: refusals)
    func refusesNamingTheField(_ vector: (String, String)) {
        do {
            _ = try parse(vector.0)
            Issue.record("accepted \(vector.0)")
        } catch {
            #expect(error.reason == .invalid)
            #expect(error.field == vector.1, "\(vector.0): \(error)")
        }
    }
}
