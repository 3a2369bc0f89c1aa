import Testing
@testable import Lifecycles

/// Each rule a client of the IETF resumable upload draft and of tus 1.0.0 follows, one test each,
/// driven through the value alone: the requests it asks for and what each answer makes of it.
struct UploadResumptionTests {
    typealias U = UploadResumption
    static let interop = ["upload-draft-interop-version": U.ietfInteropVersion]

    static func headers(_ request: U.Request) -> [String: String] {
        Dictionary(request.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
    }

    /// Sends what the value asks next and reports how it ended.
    static func exchange(_ u: inout U, _ ending: U.Ending) -> (U.Request, U.Action) {
        let request = u.nextRequest
        u.requestSent(request)
        return (request, u.exchangeEnded(ending))
    }

    /// An IETF upload of 100 bytes whose creation request was cut after 60 bytes, its resource
    /// named by a 104: the next request asks for the offset.
    static func cutIETF() -> U {
        var u = U(dialect: .ietf, method: "PUT", url: "http://o/f", length: 100)
        u.requestSent(u.nextRequest)
        _ = u.interimReceived(.init(status: 104, fields: interop, location: "http://o/uploads/a"))
        let answer = u.exchangeEnded(.interrupted(bodyBytesSent: 60))
        #expect(answer == .retryLater)
        return u
    }

    @Test func ietfOffersResumptionOnTheTasksOwnRequest() {
        let request = U(dialect: .ietf, method: "POST", url: "http://o/f", length: 100).nextRequest
        #expect(request.kind == .create && request.method == "POST" && request.url == "http://o/f" && request.bodyFrom == 0)
        #expect(UploadResumptionTests.headers(request) == [
            "Upload-Draft-Interop-Version": "8", "Upload-Complete": "?1", "Upload-Length": "100"])
    }

    @Test func ietf104NamesTheResourceOnlyWithTheInteropVersion() {
        var u = U(dialect: .ietf, method: "PUT", url: "http://o/f", length: 100)
        u.requestSent(u.nextRequest)
        let answer = u.interimReceived(.init(status: 104, fields: ["upload-draft-interop-version": "3"], location: "http://o/u/old"))
        #expect(!answer)
        let answer2 = u.interimReceived(.init(status: 100, fields: UploadResumptionTests.interop, location: "http://o/u/x"))
        #expect(!answer2)
        #expect(u.resource == nil)
        let answer3 = u.interimReceived(.init(status: 104, fields: UploadResumptionTests.interop, location: "http://o/u/a"))
        #expect(answer3)
        #expect(u.resource == "http://o/u/a")
    }

    @Test func ietfCreationCutWithoutA104IsAPlainUploadsFailure() {
        var u = U(dialect: .ietf, method: "PUT", url: "http://o/f", length: 100)
        let answer = UploadResumptionTests.exchange(&u, .interrupted(bodyBytesSent: 60)).1
        #expect(answer == .report)
    }

    @Test func ietfLostConnectionAsksTheOffsetThenAppendsTheRest() {
        var u = UploadResumptionTests.cutIETF()
        let (head, action) = UploadResumptionTests.exchange(&u, .response(.init(status: 204, fields: ["upload-offset": "60"]), bodyBytesSent: 0))
        #expect(head.method == "HEAD" && head.url == "http://o/uploads/a" && head.bodyFrom == nil && action == .sendNext)
        let (patch, end) = UploadResumptionTests.exchange(&u, .response(.init(status: 201), bodyBytesSent: 40))
        #expect(patch.method == "PATCH" && patch.url == "http://o/uploads/a" && patch.bodyFrom == 60)
        #expect(UploadResumptionTests.headers(patch) == ["Upload-Draft-Interop-Version": "8", "Upload-Complete": "?1",
                                                         "Upload-Offset": "60", "Content-Type": "application/partial-upload"])
        #expect(end == .report && u.offset == 100 && u.bytesResent == 0)
    }

    @Test func ietf5xxWithoutUploadCompleteResumes() {
        var u = U(dialect: .ietf, method: "PUT", url: "http://o/f", length: 100)
        u.requestSent(u.nextRequest)
        _ = u.interimReceived(.init(status: 104, fields: UploadResumptionTests.interop, location: "http://o/u/a"))
        let answer = u.exchangeEnded(.response(.init(status: 503), bodyBytesSent: 30))
        #expect(answer == .retryLater)
        #expect(u.nextRequest.method == "HEAD")
    }

    @Test func ietfFinalErrorWithUploadCompleteIsNotFixedByResuming() {
        var u = UploadResumptionTests.cutIETF()
        _ = UploadResumptionTests.exchange(&u, .response(.init(status: 204, fields: ["upload-offset": "60"]), bodyBytesSent: 0))
        let complete = ["upload-complete": "?1"]
        var five = u, four = u
        let answer = UploadResumptionTests.exchange(&five, .response(.init(status: 500, fields: complete), bodyBytesSent: 40)).1
        #expect(answer == .report)
        let answer2 = UploadResumptionTests.exchange(&four, .response(.init(status: 422, fields: complete), bodyBytesSent: 40)).1
        #expect(answer2 == .report)
    }

    @Test func ietfOffsetThatMovedBackwardsIsWhereTheAppendStartsAndWhatWentTwiceIsCounted() {
        var u = UploadResumptionTests.cutIETF()
        _ = UploadResumptionTests.exchange(&u, .response(.init(status: 204, fields: ["upload-offset": "20"]), bodyBytesSent: 0))
        #expect(u.offset == 20)
        let (patch, _) = UploadResumptionTests.exchange(&u, .response(.init(status: 200), bodyBytesSent: 80))
        #expect(patch.bodyFrom == 20 && u.bytesResent == 40 && u.sentThrough == 100)
    }

    @Test func ietf409CarriesTheRightOffset() {
        var u = UploadResumptionTests.cutIETF()
        _ = UploadResumptionTests.exchange(&u, .response(.init(status: 204, fields: ["upload-offset": "60"]), bodyBytesSent: 0))
        let answer = UploadResumptionTests.exchange(&u, .response(.init(status: 409, fields: ["upload-offset": "55"]), bodyBytesSent: 0)).1
        #expect(answer == .sendNext)
        #expect(u.nextRequest.method == "PATCH" && u.nextRequest.bodyFrom == 55)
        // Without an offset in it, a 409 sends the client to ask for one.
        let answer2 = UploadResumptionTests.exchange(&u, .response(.init(status: 409), bodyBytesSent: 0)).1
        #expect(answer2 == .sendNext)
        #expect(u.nextRequest.method == "HEAD")
    }

    @Test(arguments: [404, 410]) func ietfLostResourceStartsOverFromZero(status: Int) {
        var u = UploadResumptionTests.cutIETF()
        let answer = UploadResumptionTests.exchange(&u, .response(.init(status: status), bodyBytesSent: 0)).1
        #expect(answer == .sendNext)
        let request = u.nextRequest
        #expect(request.kind == .create && request.url == "http://o/f" && request.bodyFrom == 0 && u.resource == nil)
    }

    @Test func ietfHeadThatSaysCompleteFailsTheUpload() {
        var u = UploadResumptionTests.cutIETF()
        let reply = U.Reply(status: 204, fields: ["upload-offset": "100", "upload-complete": "?1"])
        guard case .fail = UploadResumptionTests.exchange(&u, .response(reply, bodyBytesSent: 0)).1 else {
            Issue.record("expected a failure")
            return
        }
    }

    @Test func continuedUploadAsksForTheOffsetFirst() {
        let u = U(dialect: .ietf, method: "PUT", url: "http://o/f", length: 100, resource: "http://o/u/a", offset: 70)
        #expect(u.needsOffset && u.nextRequest.method == "HEAD")
        let tus = U(dialect: .tus, method: "PUT", url: "http://o/files", length: 100, resource: nil, offset: 70)
        #expect(tus.offset == 0 && tus.nextRequest.method == "POST")
    }

    @Test func uploadThatMakesNoProgressGivesUp() {
        var u = UploadResumptionTests.cutIETF()
        var last = U.Action.sendNext
        for _ in 0...U.stallLimit where last == .sendNext || last == .retryLater {
            last = UploadResumptionTests.exchange(&u, .interrupted(bodyBytesSent: 0)).1
        }
        guard case .fail = last else {
            Issue.record("expected a failure, got \(last)")
            return
        }
    }

    @Test func tusCreatesThenAppendsWithTusResumableOnEveryRequest() {
        var u = U(dialect: .tus, method: "PUT", url: "http://o/files", length: 10)
        let (create, created) = UploadResumptionTests.exchange(&u, .response(.init(status: 201, location: "http://o/files/x"), bodyBytesSent: 0))
        #expect(create.method == "POST" && create.bodyFrom == nil && created == .sendNext)
        #expect(UploadResumptionTests.headers(create) == ["Tus-Resumable": "1.0.0", "Upload-Length": "10"])
        let (patch, end) = UploadResumptionTests.exchange(&u, .response(.init(status: 204, fields: ["upload-offset": "10"]), bodyBytesSent: 10))
        #expect(UploadResumptionTests.headers(patch) == ["Tus-Resumable": "1.0.0", "Upload-Offset": "0",
                                                         "Content-Type": "application/offset+octet-stream"])
        #expect(patch.url == "http://o/files/x" && end == .report)
    }

    @Test func tusCutAppendAsksTheOffsetAndConflictsAskAgain() {
        var u = U(dialect: .tus, method: "PUT", url: "http://o/files", length: 10)
        _ = UploadResumptionTests.exchange(&u, .response(.init(status: 201, location: "http://o/files/x"), bodyBytesSent: 0))
        let answer = UploadResumptionTests.exchange(&u, .interrupted(bodyBytesSent: 6)).1
        #expect(answer == .retryLater)
        let (head, _) = UploadResumptionTests.exchange(&u, .response(.init(status: 200, fields: ["upload-offset": "4"]), bodyBytesSent: 0))
        #expect(UploadResumptionTests.headers(head) == ["Tus-Resumable": "1.0.0"] && head.method == "HEAD")
        for status in [409, 460] {
            let answer2 = UploadResumptionTests.exchange(&u, .response(.init(status: status), bodyBytesSent: 0)).1
            #expect(answer2 == .sendNext)
            #expect(u.nextRequest.method == "HEAD")
            _ = UploadResumptionTests.exchange(&u, .response(.init(status: 200, fields: ["upload-offset": "4"]), bodyBytesSent: 0))
        }
        let (patch, end) = UploadResumptionTests.exchange(&u, .response(.init(status: 204, fields: ["upload-offset": "10"]), bodyBytesSent: 6))
        #expect(patch.bodyFrom == 4 && end == .report && u.bytesResent == 2)
    }

    @Test func tusLostResourceIsCreatedAgain() {
        var u = U(dialect: .tus, method: "PUT", url: "http://o/files", length: 10, resource: "http://o/files/x", offset: 4)
        let answer = UploadResumptionTests.exchange(&u, .response(.init(status: 410), bodyBytesSent: 0)).1
        #expect(answer == .sendNext)
        #expect(u.nextRequest.method == "POST" && u.resource == nil)
    }

    @Test func tusHeadThatFindsItAllIsTheEnd() {
        var u = U(dialect: .tus, method: "PUT", url: "http://o/files", length: 10, resource: "http://o/files/x", offset: 4)
        let answer = UploadResumptionTests.exchange(&u, .response(.init(status: 200, fields: ["upload-offset": "10"]), bodyBytesSent: 0)).1
        #expect(answer == .report)
    }
}
