import Lifecycles
import HTTPServer
import Testing
import TransferEngine
@testable import JSON
@testable import TransferCore
@testable import TransferModel

struct ResumeDataTests {
    let key = [UInt8](repeating: 7, count: 32)
    let data = ResumeData(url: "https://example.com/a.iso", validator: "\"etag-1\"", offset: 123_456,
                          partial: "/data/sessions/s/files/.t.resume", destination: nil, origin: "s/t")

    @Test func roundTrips() throws {
        #expect(try ResumeData.parse(data.token(key: key), key: key) == data)
    }

    @Test func isReadableJSON() throws {
        let json = try JSONParser.parse(try #require(Base64.decode(data.token(key: key))))
        #expect(json["offset"]?.intValue == 123_456)
        #expect(json["url"]?.stringValue == "https://example.com/a.iso")
        #expect(json["signature"]?.stringValue?.count == 64)
    }

    @Test func anyChangeIsRefused() throws {
        // The same token with the offset changed, signature untouched.
        var altered = data
        altered.offset = 0
        var json = try JSONParser.parse(try #require(Base64.decode(altered.token(key: key))))
        guard case .object(var members) = json else { Issue.record("not an object"); return }
        let original = try JSONParser.parse(try #require(Base64.decode(data.token(key: key))))
        members.removeAll { $0.0 == "signature" }
        members.append(("signature", original["signature"]!))
        json = .object(members)
        var writer = JSONWriter()
        writer.value(json)
        for token in [Base64.encode(writer.bytes), "not base64!", Base64.encode(Array("{}".utf8)), ""] {
            #expect(throws: Refusal.self) { try ResumeData.parse(token, key: key) }
        }
        // Another key (another transferd) refuses it too.
        #expect(throws: Refusal.self) { try ResumeData.parse(data.token(key: key), key: [UInt8](repeating: 8, count: 32)) }
    }
}

struct RetryPolicyTests {
    func policy(_ json: String, mode: SessionMode = .default) throws -> RetryPolicy {
        RetryPolicy(configuration: try SessionConfiguration.parse(try JSONParser.parse(Array(json.utf8))), mode: mode)
    }

    let far = Timestamp.now().adding(seconds: 86_400)
    let reset = TransferFailure(.networkConnectionLost, "reset")

    /// The delay of a `.retry` decision, nil for any other.
    func delay(_ p: RetryPolicy, _ cause: RetryPolicy.Cause, attempts: Int, deadline: Timestamp? = nil) -> Double? {
        guard case .retry(let delay) = p.decide(after: cause, attempts: attempts, deadline: deadline ?? far) else { return nil }
        return delay
    }

    @Test func transientFailuresBackOffExponentiallyWithinMaxAttempts() throws {
        let p = try policy(#"{"retry": {"max_attempts": 4, "backoff_initial_s": 1, "backoff_max_s": 300}}"#)
        let delays = (1...3).map { delay(p, .failure(reset), attempts: $0) ?? -1 }
        #expect(delays[0] >= 0.75 && delays[0] <= 1.25)
        #expect(delays[1] >= 1.5 && delays[1] <= 2.5)
        #expect(delays[2] >= 3 && delays[2] <= 5)
        #expect(p.decide(after: .failure(reset), attempts: 4, deadline: far) == .stop)
    }

    @Test func backoffIsCapped() throws {
        let p = try policy(#"{"retry": {"max_attempts": 50, "backoff_initial_s": 1, "backoff_max_s": 10}}"#)
        #expect(try #require(delay(p, .failure(reset), attempts: 20)) <= 12.5)
    }

    @Test func permanentFailuresAreNotRetried() throws {
        let p = try policy("{}")
        for code in [TaskErrorCode.unsupportedURL, .tooManyRedirects, .blockedByPolicy, .cannotWriteToFile, .serverCertificateUntrusted] {
            #expect(p.decide(after: .failure(TransferFailure(code, "x")), attempts: 1, deadline: far) == .stop)
        }
    }

    @Test func statusesOnlyWhenListedAnd429WithRetryAfter() throws {
        let p = try policy(#"{"retry": {"on_http_status": [503]}}"#)
        #expect(delay(p, .status(503, retryAfter: nil), attempts: 1) != nil)
        #expect(p.decide(after: .status(500, retryAfter: nil), attempts: 1, deadline: far) == .stop)
        #expect(p.decide(after: .status(429, retryAfter: nil), attempts: 1, deadline: far) == .stop)
        #expect(try #require(delay(p, .status(429, retryAfter: 30), attempts: 1)) >= 30)
        #expect(try #require(delay(p, .status(503, retryAfter: 20), attempts: 1)) >= 20)
    }

    @Test func waitingForConnectivityIgnoresMaxAttemptsButNotTheDeadline() throws {
        let p = try policy(#"{"retry": {"max_attempts": 2}}"#, mode: .background)
        let refused = TransferFailure(.cannotConnectToHost, "refused")
        #expect(delay(p, .failure(refused), attempts: 10) != nil)
        // The deadline, not the failure, ends it: the task then times out.
        #expect(p.decide(after: .failure(refused), attempts: 10, deadline: Timestamp.now().adding(seconds: 0.1)) == .deadline)
        // A default session does not wait for connectivity unless told to.
        #expect(try policy(#"{"retry": {"max_attempts": 2}}"#).decide(after: .failure(refused), attempts: 10, deadline: far) == .stop)
    }

    @Test func aRetryAfterBeyondTheDeadlineEndsTheTask() throws {
        let p = try policy(#"{"retry": {"on_http_status": [503]}}"#)
        #expect(p.decide(after: .status(503, retryAfter: 60), attempts: 1, deadline: Timestamp.now().adding(seconds: 30)) == .deadline)
    }
}

struct ResumeValidatorTests {
    func head(_ status: Int, _ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: headers, url: "http://example.com/a")
    }

    @Test func aStrongETagIsPreferredToLastModified() {
        let both = head(200, [("ETag", "\"v1\""), ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")])
        #expect(TaskCoordinator.validator(after: both, previous: nil) == "\"v1\"")
        let weak = head(200, [("ETag", "W/\"v1\""), ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")])
        #expect(TaskCoordinator.validator(after: weak, previous: nil) == "Tue, 14 Nov 2023 22:13:20 GMT")
    }

    @Test func aFullAnswerReplacesTheValidatorEvenWithNone() {
        // The file now holds the new body: an old validator would resume it as the old resource.
        #expect(TaskCoordinator.validator(after: head(200, []), previous: "\"old\"") == nil)
        #expect(TaskCoordinator.validator(after: head(200, [("ETag", "\"new\"")]), previous: "\"old\"") == "\"new\"")
    }

    @Test func aPartialAnswerKeepsTheValidatorItContinued() {
        #expect(TaskCoordinator.validator(after: head(206, []), previous: "\"old\"") == "\"old\"")
        #expect(TaskCoordinator.validator(after: nil, previous: "\"old\"") == "\"old\"")
    }
}
