import Glibc
import HTTPServer
import ReplicaForwarding
import Testing
@testable import TransferAPI

/// A replica answering for a session another replica holds: requests go there through real
/// sockets, and what comes back is what the holder said.
@Suite(.serialized) struct ForwardingTests {
    static let auth = ("Authorization", "Bearer \(ReplicaPair.token)")

    /// Fields a replica writes for itself, which differ between two replicas by design.
    static let ownFields: Set<String> = ["date", "connection", "ratelimit", "ratelimit-policy"]

    static func comparable(_ response: WireCall.Response) -> [String] {
        response.fields.filter { !ownFields.contains($0.name.lowercased()) }.map { "\($0.name): \($0.value)" }
    }

    @Test func everyMethodIsAnsweredByTheHolderAsItAnswers() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let holderPort = pair.holder.boundAddress.port
        let body = Array(#"{"configuration": {"headers": {"X-A": "ü"}}}"#.utf8)
        let cases: [(method: String, target: String, body: [UInt8], extra: [(String, String)])] = [
            ("GET", "/v1/sessions/s-b1?after=7&limit=%2010", [], [("If-None-Match", "\"x\"")]),
            ("HEAD", "/v1/sessions/s-b1", [], []),
            ("PUT", "/v1/sessions/s-b1", body, [("Content-Type", "application/json")]),
            ("PATCH", "/v1/sessions/s-b1", body, [("Content-Type", "application/merge-patch+json"), ("If-Match", "\"5-0\"")]),
            ("DELETE", "/v1/sessions/s-b1", [], [("If-Match", "*")]),
            ("POST", "/v1/sessions/s-b1/tasks", body, [("Content-Type", "application/json"), ("Idempotency-Key", "k-1")]),
            ("POST", "/v1/sessions/s-b1/tasks", [], [("Idempotency-Key", "k-empty")]),
            ("GET", "/v1/sessions/s-b1", [], [("X-Test-Status", "409")]),
        ]
        for (index, c) in cases.enumerated() {
            let id = "forwarding-case-\(index)"
            let fields = c.extra + [("X-Request-Id", id), ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
                                    ("X-Client-Field", "kept"), ("Keep-Alive", "timeout=5")]
            let direct = try WireCall.call(port: holderPort, c.method, c.target, fields: fields, body: c.body)
            let relayed = try WireCall.call(port: pair.replicaPort, c.method, c.target, fields: fields + [Self.auth], body: c.body)
            #expect(relayed.status == direct.status, "\(c.method) \(c.target)")
            #expect(Self.comparable(relayed) == Self.comparable(direct), "\(c.method) \(c.target)")
            #expect(relayed.body == direct.body, "\(c.method) \(c.target): \(relayed.text)")
            #expect(relayed.text.ranges(of: "\"instance\"").count <= 1, "a relayed problem names its instance once")

            let arrived = try #require(pair.received.withLock { $0[id] })
            #expect(arrived.method == c.method)
            #expect(arrived.head.target == c.target)
            #expect(arrived.body == c.body)
            for (name, value) in fields + [Self.auth] where !["keep-alive"].contains(name.lowercased()) {
                #expect(arrived.headers.values(name) == [value], "\(name) reaches the holder as sent")
            }
            #expect(arrived.headers[ReplicaForwarder.forwardedHeader]?.hasPrefix("127.0.0.1:7001; proof=") == true)
            #expect(pair.forwarder.proof.verifies(arrived), "signed for this request")
            #expect(arrived.headers["host"] == pair.holderAddress)
            for dropped in ["keep-alive", "connection", "expect", "accept"] {
                #expect(arrived.headers[dropped] == nil, "\(dropped) is not relayed, nor added")
            }
            #expect(arrived.headers["content-type"] == c.extra.first { $0.0 == "Content-Type" }?.1, "no type of curl's own")
        }
    }

    @Test func fieldsTheConnectionNamesStayOnIt() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let fields = [("Connection", "close, X-Hop"), ("X-Hop", "1"), ("X-Request-Id", "hop"), Self.auth]
        let relayed = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b2", fields: fields)
        #expect(relayed.status == 200)
        let arrived = try #require(pair.received.withLock { $0["hop"] })
        #expect(arrived.headers["x-hop"] == nil)
    }

    @Test func anAbsoluteFormTargetReachesTheHolderInOriginForm() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let response = try WireCall.call(port: pair.replicaPort, "GET", "http://transferd.example/v1/sessions/s-b3?x=%2F",
                                         fields: [("X-Request-Id", "absolute"), Self.auth])
        #expect(response.status == 200)
        #expect(pair.received.withLock { $0["absolute"]?.head.target } == "/v1/sessions/s-b3?x=%2F")
    }

    @Test func aForwardedRequestIsServedWhereItArrives() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        func forwarded(_ target: String) throws -> WireCall.Response {
            let proof = pair.forwarder.proof.value(method: "GET", target: target, requestID: "from-a-replica", from: "10.1.1.1:8080")
            return try WireCall.call(port: pair.replicaPort, "GET", target,
                                     fields: [Self.auth, ("X-Request-Id", "from-a-replica"), (ReplicaForwarder.forwardedHeader, proof)])
        }
        #expect(try forwarded("/v1/sessions/s-a1").status == 404, "A's own answer: it would hold s-a1, and has no such session")
        // Sent to A as to the holder, while A's placement says B holds it: not sent on, but refused for a retry.
        let moved = try forwarded("/v1/sessions/s-b1")
        #expect(moved.status == 503)
        #expect(moved.field("Retry-After") == "1")
        #expect(moved.text.contains(#""code":"replica_unavailable""#), "\(moved.text)")
        #expect(pair.forwarder.forwardedCount == 0)
        #expect(pair.received.withLock { $0.isEmpty })
    }

    /// A client cannot pass for a replica: a field without a proof, or with one made for another
    /// request or under another secret, is not trusted and the request goes to the holder.
    @Test func aForwardedFieldWithoutAValidProofIsNotTrusted() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let otherTarget = pair.forwarder.proof.value(method: "GET", target: "/v1/sessions/s-b9", requestID: "forged", from: "x:1")
        let otherSecret = ForwardingProof(secret: Array("guess".utf8))
            .value(method: "GET", target: "/v1/sessions/s-b1", requestID: "forged", from: "x:1")
        for forged in ["10.1.1.1:8080", "10.1.1.1:8080; proof=00", otherTarget, otherSecret] {
            _ = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b1",
                                  fields: [Self.auth, ("X-Request-Id", "forged"), (ReplicaForwarder.forwardedHeader, forged)])
        }
        #expect(pair.forwarder.forwardedCount == 4)
    }

    @Test func sessionsHeldHereAndRefusalsStayHere() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        #expect(try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-a1", fields: [Self.auth]).status == 404)
        #expect(try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b1").status == 401, "the gate decides first")
        #expect(try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions", fields: [Self.auth]).status == 200)
        #expect(pair.forwarder.forwardedCount == 0)
        #expect(pair.received.withLock { $0.isEmpty })
    }

    /// A durable session's journal is in the shared store: read where the request arrives. An
    /// ephemeral session's is only in its holder's memory: forwarded there.
    @Test func aDurableSessionsJournalIsReadHereAnEphemeralOnesAtItsHolder() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        try pair.storeSession("s-b1", mode: "background")
        try pair.storeSession("s-b2", mode: "ephemeral")
        let durable = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b1/events?wait=0", fields: [Self.auth])
        #expect(durable.status == 200)
        #expect(durable.text.contains(#""events":[]"#), "\(durable.text)")
        #expect(pair.forwarder.forwardedCount == 0)
        _ = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b2/events?wait=0", fields: [Self.auth])
        #expect(pair.forwarder.forwardedCount == 1, "the ephemeral session's journal is read at its holder")
    }

    /// Where memory cannot tell, the store is asked off the server's threads, and the request is
    /// then forwarded or served here as it says.
    @Test func aSessionOnlyTheStoreKnowsIsLookedUpThenForwardedOrServed() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let remote = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b-lookup-1", fields: [Self.auth])
        #expect(remote.status == 200)
        #expect(pair.forwarder.forwardedCount == 1)
        let local = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-a-lookup-1", fields: [Self.auth])
        #expect(local.status == 404, "served here: A has no such session")
        #expect(pair.forwarder.forwardedCount == 1)
    }

    /// A session whose holder is gone but still leased (the process this replica replaced at its
    /// address) is neither served here nor sent anywhere: the client is asked to retry. So is one
    /// whose place the store cannot say (the database is down): served here, where it is not in
    /// memory, it would be said not to exist.
    @Test(arguments: [("s-moving-1", "replica_unavailable"), ("s-unknown-lookup-1", "store_unavailable")])
    func aSessionThatCannotBeServedNowAsksForARetry(session: String, code: String) throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let response = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/\(session)", fields: [Self.auth])
        #expect(response.status == 503)
        #expect(response.field("Retry-After") == "1")
        #expect(response.text.contains(#""code":"\#(code)""#), "\(response.text)")
        #expect(pair.forwarder.forwardedCount == 0)
    }

    @Test func aHolderThatCannotBeReachedAsksForARetry() throws {
        // Port 1 on loopback: nothing listens there, so the connection is refused.
        let pair = try ReplicaPair(holders: ["s-gone": "127.0.0.1:1"])
        defer { pair.shutdown() }
        let response = try WireCall.call(port: pair.replicaPort, "POST", "/v1/sessions/s-gone/tasks", fields: [Self.auth],
                                         body: Array("{}".utf8))
        #expect(response.status == 503)
        #expect(response.field("Retry-After") == "1")
        #expect(response.field("Content-Type") == "application/problem+json")
        #expect(response.text.contains(#""code":"replica_unavailable""#), "\(response.text)")
        #expect(pair.forwarder.forwardedCount == 1)
    }

    @Test func aPlacementThatNamesThisReplicaIsServedHere() throws {
        let pair = try ReplicaPair(holders: ["s-self": "127.0.0.1:7001"])
        defer { pair.shutdown() }
        #expect(try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-self", fields: [Self.auth]).status == 404)
        #expect(pair.forwarder.forwardedCount == 0)
    }

    @Test func requestsInFlightWhenTheForwarderStopsAreAnswered() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let call = try WireCall(port: pair.replicaPort, "GET", "/v1/sessions/s-b1/cookies", fields: [Self.auth, ("X-Request-Id", "held")])
        var tries = 0
        while pair.received.withLock({ $0["held"] == nil }) && tries < 1000 {
            usleep(10_000)
            tries += 1
        }
        #expect(pair.held.withLock { $0.count } == 1, "the holder has it")
        pair.forwarder.shutdown()
        let response = try call.response()
        #expect(response.status == 503)
        #expect(response.text.contains(#""code":"replica_unavailable""#))
    }

    @Test func aHolderThatFallsSilentIsGivenUpOnButALongPollIsWaitedFor() throws {
        var limits = ReplicaForwarder.Limits()
        limits.idleTimeout = 2
        let pair = try ReplicaPair(limits: limits)
        defer { pair.shutdown() }
        // B keeps this one unanswered.
        let silent = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b1/cookies", fields: [Self.auth])
        #expect(silent.status == 503)
        #expect(silent.text.contains(#""code":"replica_unavailable""#))
        // B answers this one after the 4 s it asks for: beyond the idle timeout, within it plus the wait.
        let polled = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b1/tasks/t1?wait=4", fields: [Self.auth])
        #expect(polled.status == 200)
        #expect(polled.text == "waited 4.0")
        // Whatever the wait says, it is the holder's to refuse.
        for wait in ["nan", "-inf", "1e400", "x"] {
            let odd = try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b1/tasks/t1?wait=\(wait)", fields: [Self.auth])
            #expect(odd.text == "waited 0.0", "wait=\(wait)")
        }
    }

    @Test func aLargeFileIsRelayedWholeWithItsLength() throws {
        let pair = try ReplicaPair()
        defer { pair.shutdown() }
        let path = "/v1/sessions/s-b1/tasks/t1/file"
        let response = try WireCall.call(port: pair.replicaPort, "GET", path, fields: [Self.auth])
        #expect(response.status == 200)
        #expect(response.field("Content-Length") == String(ReplicaPair.file.count), "the holder's length, not chunks")
        #expect(response.field("Transfer-Encoding") == nil)
        #expect(response.field("ETag") == "\"file-1\"")
        #expect(response.body.count == ReplicaPair.file.count)
        #expect(response.body == ReplicaPair.file)

        let head = try WireCall.call(port: pair.replicaPort, "HEAD", path, fields: [Self.auth])
        #expect(head.status == 200)
        #expect(head.field("Content-Length") == String(ReplicaPair.file.count))
        #expect(head.body.isEmpty)
    }

    @Test func aClientThatReadsSlowlyIsWaitedFor() throws {
        var limits = ReplicaForwarder.Limits()
        limits.idleTimeout = 1
        let pair = try ReplicaPair(limits: limits)
        defer { pair.shutdown() }
        let call = try WireCall(port: pair.replicaPort, "GET", "/v1/sessions/s-b1/tasks/t1/body", fields: [Self.auth])
        // Meanwhile the holder could send all of it; a replica that took it all in for this client
        // would exceed what it holds for one (and close the connection). Paused for the client
        // longer than the idle timeout, the relay is not taken for a silent holder either.
        usleep(3_000_000)
        let response = try call.response()
        #expect(response.status == 200)
        #expect(response.body.count == ReplicaPair.bodyLength)
    }

    @Test func manyRequestsAtOnceShareAFewKeptConnections() throws {
        var limits = ReplicaForwarder.Limits()
        limits.connectionsPerReplica = 6
        let pair = try ReplicaPair(limits: limits)
        defer { pair.shutdown() }
        let calls = try (0..<200).map { i in
            try WireCall(port: pair.replicaPort, "PUT", "/v1/sessions/s-b\(i)", fields: [Self.auth], body: Array("\(i)".utf8))
        }
        for (i, call) in calls.enumerated() {
            let response = try call.response()
            #expect(response.status == 200)
            #expect(response.text == #"{"method":"PUT","target":"/v1/sessions/s-b\#(i)","echo":\#(i)}"#)
        }
        #expect(pair.received.withLock { $0.count } == 200)
        let opened = pair.holderPeers.withLock { $0.count }
        #expect(opened <= limits.connectionsPerReplica, "\(opened) connections to the holder")

        for i in 0..<20 { #expect(try WireCall.call(port: pair.replicaPort, "GET", "/v1/sessions/s-b\(i)", fields: [Self.auth]).status == 200) }
        #expect(pair.holderPeers.withLock { $0.count } == opened, "later requests reuse the kept connections")
    }
}
