import Lifecycles
import HTTPServer
import Testing
import TransferEngine
@testable import JSON
@testable import TransferCore
@testable import TransferModel
import TransferVocabulary

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
    func policy(_ json: String, mode: SessionMode = .default, method: String = "GET") throws -> RetryPolicy {
        RetryPolicy(configuration: try SessionConfiguration.parse(try JSONParser.parse(Array(json.utf8))), mode: mode, method: method)
    }

    /// No clock: every decision is made at `now`, with the jitter given.
    let now = Timestamp(milliseconds: 1_800_000_000_000)
    var far: Timestamp { now.adding(seconds: 86_400) }
    let reset = TransferFailure(.networkConnectionLost, "reset")
    let refused = TransferFailure(.cannotConnectToHost, "refused")

    func decide(_ p: RetryPolicy, _ cause: RetryPolicy.Cause, attempts: Int, deadline: Timestamp? = nil,
                jitter: Double = 1) -> RetryPolicy.Decision {
        p.decide(after: cause, attempts: attempts, deadline: deadline ?? far, now: now, jitter: jitter)
    }

    /// The delay of a `.retry` decision, nil for any other.
    func delay(_ p: RetryPolicy, _ cause: RetryPolicy.Cause, attempts: Int, deadline: Timestamp? = nil, jitter: Double = 1) -> Double? {
        guard case .retry(let delay) = decide(p, cause, attempts: attempts, deadline: deadline, jitter: jitter) else { return nil }
        return delay
    }

    @Test func transientFailuresBackOffExponentiallyWithinMaxAttempts() throws {
        let p = try policy(#"{"retry": {"max_attempts": 4, "backoff_initial_s": 1, "backoff_max_s": 300}}"#)
        #expect((1...3).map { delay(p, .failure(reset, requestSent: true), attempts: $0) } == [1, 2, 4])
        #expect(delay(p, .failure(reset, requestSent: true), attempts: 2, jitter: 0.75) == 1.5)
        #expect(delay(p, .failure(reset, requestSent: true), attempts: 2, jitter: 1.25) == 2.5)
        #expect(decide(p, .failure(reset, requestSent: true), attempts: 4) == .stop)
    }

    @Test func backoffIsCappedJitterIncluded() throws {
        let p = try policy(#"{"retry": {"max_attempts": 50, "backoff_initial_s": 1, "backoff_max_s": 10}}"#)
        #expect(delay(p, .failure(reset, requestSent: true), attempts: 20, jitter: 1.25) == 10)
        #expect(delay(p, .failure(reset, requestSent: true), attempts: 20, jitter: 0.75) == 7.5)
    }

    @Test func permanentFailuresAreNotRetried() throws {
        let p = try policy("{}")
        for code in [TaskErrorCode.unsupportedURL, .tooManyRedirects, .blockedByPolicy, .cannotWriteToFile, .serverCertificateUntrusted] {
            #expect(decide(p, .failure(TransferFailure(code, "x"), requestSent: false), attempts: 1) == .stop)
        }
    }

    @Test func aRequestTheOriginMayHaveSeenIsRetriedOnlyForTheMethodsListed() throws {
        let post = try policy("{}", method: "POST")
        #expect(decide(post, .failure(reset, requestSent: true), attempts: 1) == .stop)
        #expect(decide(post, .failure(TransferFailure(.timedOut, "idle"), requestSent: true), attempts: 1) == .stop)
        // Before the request left, any method is retried: the origin saw nothing.
        #expect(delay(post, .failure(refused, requestSent: false), attempts: 1) == 1)
        #expect(delay(post, .failure(reset, requestSent: false), attempts: 1) == 1)
        // The idempotent methods are listed by default, and the list can name others.
        for method in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"] {
            #expect(delay(try policy("{}", method: method), .failure(reset, requestSent: true), attempts: 1) == 1)
        }
        #expect(decide(try policy("{}", method: "PATCH"), .failure(reset, requestSent: true), attempts: 1) == .stop)
        let listed = try policy(#"{"retry": {"methods": ["POST"], "max_attempts": 2}}"#, method: "POST")
        #expect(delay(listed, .failure(reset, requestSent: true), attempts: 1) == 1)
        #expect(decide(listed, .failure(reset, requestSent: true), attempts: 2) == .stop)
        #expect(decide(try policy(#"{"retry": {"methods": ["POST"]}}"#, method: "GET"), .failure(reset, requestSent: true), attempts: 1) == .stop)
    }

    @Test func statusesOnlyWhenListedAnd429WithRetryAfter() throws {
        let p = try policy(#"{"retry": {"on_http_status": [503]}}"#)
        #expect(delay(p, .status(503, retryAfter: nil), attempts: 1) != nil)
        #expect(decide(p, .status(500, retryAfter: nil), attempts: 1) == .stop)
        #expect(decide(p, .status(429, retryAfter: nil), attempts: 1) == .stop)
        #expect(try #require(delay(p, .status(429, retryAfter: 30), attempts: 1)) >= 30)
        #expect(try #require(delay(p, .status(503, retryAfter: 20), attempts: 1)) >= 20)
        // An answer means the origin saw the request: a method not listed is not sent again.
        #expect(decide(try policy(#"{"retry": {"on_http_status": [503]}}"#, method: "POST"), .status(503, retryAfter: nil), attempts: 1) == .stop)
    }

    @Test func waitingForConnectivityIgnoresMaxAttemptsButNotTheBackoffNorTheDeadline() throws {
        let p = try policy(#"{"retry": {"max_attempts": 2, "backoff_initial_s": 1, "backoff_max_s": 60}}"#, mode: .background)
        #expect(delay(p, .failure(refused, requestSent: false), attempts: 10) == 60)
        #expect(delay(p, .failure(refused, requestSent: false), attempts: 3) == 4)
        // The deadline, not the failure, ends it: the task then times out.
        #expect(decide(p, .failure(refused, requestSent: false), attempts: 10, deadline: now.adding(seconds: 0.1)) == .deadline)
        // A default session does not wait for connectivity unless told to.
        #expect(decide(try policy(#"{"retry": {"max_attempts": 2}}"#), .failure(refused, requestSent: false), attempts: 10) == .stop)
    }

    @Test func aConnectionLostIsNotConnectivityAndStopsAtMaxAttempts() throws {
        let p = try policy(#"{"retry": {"max_attempts": 3}}"#, mode: .background)
        #expect(delay(p, .failure(reset, requestSent: true), attempts: 2) == 2)
        #expect(decide(p, .failure(reset, requestSent: true), attempts: 3) == .stop)
        #expect(decide(p, .failure(reset, requestSent: false), attempts: 3) == .stop)
    }

    @Test func aRetryAfterBeyondTheDeadlineEndsTheTask() throws {
        let p = try policy(#"{"retry": {"on_http_status": [503]}}"#)
        #expect(decide(p, .status(503, retryAfter: 60), attempts: 1, deadline: now.adding(seconds: 30)) == .deadline)
    }
}

struct ResumeValidatorTests {
    func head(_ status: Int, _ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: headers, url: "http://example.com/a")
    }

    @Test func aStrongETagIsPreferredToLastModified() {
        let both = head(200, [("ETag", "\"v1\""), ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")])
        #expect(TaskRunner.validator(after: both, previous: nil) == "\"v1\"")
        let weak = head(200, [("ETag", "W/\"v1\""), ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")])
        #expect(TaskRunner.validator(after: weak, previous: nil) == "Tue, 14 Nov 2023 22:13:20 GMT")
    }

    @Test func aFullAnswerReplacesTheValidatorEvenWithNone() {
        // The file now holds the new body: an old validator would resume it as the old resource.
        #expect(TaskRunner.validator(after: head(200, []), previous: "\"old\"") == nil)
        #expect(TaskRunner.validator(after: head(200, [("ETag", "\"new\"")]), previous: "\"old\"") == "\"new\"")
    }

    @Test func aPartialAnswerKeepsTheValidatorItContinued() {
        #expect(TaskRunner.validator(after: head(206, []), previous: "\"old\"") == "\"old\"")
        #expect(TaskRunner.validator(after: nil, previous: "\"old\"") == "\"old\"")
    }
}
