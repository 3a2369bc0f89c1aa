import Testing
@testable import TransferEngine

/// What curl's pre-request callback is answered: a request again with no response byte since the
/// last one is curl's re-send after a reused connection closed, allowed only within the limit.
struct RequestSendsTests {
    @Test func nothingBegunMeansTheOriginSawNothing() {
        let sends = RequestSends(limit: 0)
        #expect(!sends.requestMayHaveReachedOrigin && sends.resends == 0 && !sends.refusedResend)
    }

    @Test func aResendWithoutAResponseIsRefusedPastTheLimit() {
        var sends = RequestSends(limit: 0)
        #expect(sends.requestBeginning())
        #expect(!sends.requestBeginning())
        #expect(sends.refusedResend && sends.resends == 0 && sends.requestMayHaveReachedOrigin)
    }

    @Test func resendsWithinTheLimitAreCounted() {
        var sends = RequestSends(limit: 2)
        #expect(sends.requestBeginning() && sends.requestBeginning() && sends.requestBeginning())
        #expect(sends.resends == 2 && !sends.refusedResend)
        #expect(!sends.requestBeginning())
        #expect(sends.refusedResend)
    }

    @Test func aRequestAfterAResponseIsNoResend() {
        // A redirect followed, an authentication round: each comes after a response head.
        var sends = RequestSends(limit: 0)
        for _ in 0..<3 {
            #expect(sends.requestBeginning())
            sends.responseArrived()
        }
        #expect(sends.resends == 0 && !sends.refusedResend)
        // And the request after the last response is guarded again.
        #expect(sends.requestBeginning())
        #expect(!sends.requestBeginning())
    }
}
