import Testing
@testable import TransferEngine

/// What curl's pre-request callback is answered: a request again with no response byte since the
/// last one is curl's re-send after a reused connection closed, allowed only within the limit.
struct RequestSendsTests {
    /// Tells `sends` of `count` requests beginning; what each was answered.
    func begin(_ sends: inout RequestSends, _ count: Int = 1) -> [Bool] {
        (0..<count).map { _ in sends.requestBeginning() }
    }

    @Test func nothingBegunMeansTheOriginSawNothing() {
        let sends = RequestSends(limit: 0)
        #expect(!sends.requestMayHaveReachedOrigin && sends.resends == 0 && !sends.refusedResend)
    }

    @Test func aResendWithoutAResponseIsRefusedPastTheLimit() {
        var sends = RequestSends(limit: 0)
        #expect(begin(&sends, 2) == [true, false])
        #expect(sends.refusedResend && sends.resends == 0 && sends.requestMayHaveReachedOrigin)
    }

    @Test func resendsWithinTheLimitAreCounted() {
        var sends = RequestSends(limit: 2)
        #expect(begin(&sends, 3) == [true, true, true])
        #expect(sends.resends == 2 && !sends.refusedResend)
        #expect(begin(&sends) == [false])
        #expect(sends.refusedResend)
    }

    @Test func aRequestAfterAResponseIsNoResend() {
        // A redirect followed, an authentication round: each comes after a response head.
        var sends = RequestSends(limit: 0)
        for _ in 0..<3 {
            #expect(begin(&sends) == [true])
            sends.responseArrived()
        }
        #expect(sends.resends == 0 && !sends.refusedResend)
        // And the request after the last response is guarded again.
        #expect(begin(&sends, 2) == [true, false])
    }
}
