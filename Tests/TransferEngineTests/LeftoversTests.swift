import Testing
@testable import TransferEngine

/// Bytes waiting on a finished transfer's kept connection: leftovers of its response are dropped
/// with the connection; another transfer's response is left alone.
struct LeftoversTests {
    static let ends = ConnectionEnds(remoteIP: "127.0.0.1", remotePort: 8080, localPort: 40_000)
    static let body = Array("\u{1}\u{2}rest of a body".utf8)

    /// The transfer the connection was handed to: its request went out on it; `answered`: its
    /// response head has begun to arrive.
    static func holder(answered: Bool) -> RequestSends {
        var sends = RequestSends(limit: 0)
        let began = sends.requestBeginning(on: ends)
        #expect(began)
        if answered { sends.responseArrived() }
        return sends
    }

    @Test func nothingWaitingIsLeftAlone() {
        #expect(!Leftovers.mustShutConnection(waiting: [UInt8](), holder: nil))
    }

    @Test func aStatusLineIsAResponseNotLeftovers() {
        #expect(!Leftovers.mustShutConnection(waiting: Array("HTTP/".utf8), holder: nil))
        #expect(!Leftovers.mustShutConnection(waiting: Array("HT".utf8), holder: nil))
    }

    @Test func bodyBytesNobodyAskedForAreLeftovers() {
        #expect(Leftovers.mustShutConnection(waiting: Self.body.prefix(5), holder: nil))
    }

    /// The next transfer took the connection within the step that finished this one and read its
    /// head already: the bytes waiting are its body. Shutting the connection cut that download
    /// short, and its retry continued with `Range`.
    @Test func theBodyOfTheNextTransferOnTheConnectionIsLeftAlone() {
        #expect(!Leftovers.mustShutConnection(waiting: Self.body.prefix(5), holder: Self.holder(answered: true)))
    }

    /// Its request went out but no answer came yet: the bytes would be read as its answer, so
    /// the connection is shut and curl sends the request again on a fresh one.
    @Test func leftoversBeforeTheNextAnswerAreStillDropped() {
        #expect(Leftovers.mustShutConnection(waiting: Self.body.prefix(5), holder: Self.holder(answered: false)))
    }

    @Test func aRequestRemembersItsConnection() {
        var sends = RequestSends(limit: 1)
        #expect(sends.connection == nil)
        let began = sends.requestBeginning(on: Self.ends)
        #expect(began)
        #expect(sends.connection == Self.ends && !sends.answered)
    }
}
