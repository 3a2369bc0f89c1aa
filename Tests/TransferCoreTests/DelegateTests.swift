import Testing
@testable import JSON
@testable import TransferCore
@testable import TransferModel

struct DelegateTests {
    static let secret = "whsec_" + String(repeating: "A", count: 32)

    func parse(_ members: String) throws(Refusal) -> Delegate? {
        let json = try! JSONParser.parse(Array(#"{"url": "https://hooks.example.com/x", "secret": "\#(Self.secret)"\#(members)}"#.utf8))
        return try Delegate.parse(json)?.0
    }

    @Test func deliversOneAtATimeUnlessTold() throws {
        #expect(try parse("")?.maxInFlight == 1)
        #expect(try parse(#", "max_in_flight": null"#)?.maxInFlight == 1)
        #expect(try parse(#", "max_in_flight": 8"#)?.maxInFlight == 8)
        #expect(try parse(#", "max_in_flight": 64"#)?.maxInFlight == 64)
    }

    @Test(arguments: ["0", "65", "-1", "1.5", #""4""#, "true"])
    func refusesAnotherMaxInFlightNamingTheField(_ value: String) {
        do {
            _ = try parse(#", "max_in_flight": \#(value)"#)
            Issue.record("max_in_flight \(value) was accepted")
        } catch {
            #expect(error.reason == .invalid && error.field == "delegate.max_in_flight", "\(value): \(error)")
        }
    }

    @Test func keepsMaxInFlightWhenStored() throws {
        let delegate = Delegate(url: "https://hooks.example.com/x", secret: Self.secret, events: [.taskCompleted], maxInFlight: 8)
        #expect(Delegate(stored: delegate.stored) == delegate)
        // Stored before the field existed: one at a time.
        let older = #"{"url":"https://hooks.example.com/x","secret":"\#(Self.secret)","events":null,"disabled":true}"#
        #expect(Delegate(stored: older)?.maxInFlight == 1)
        #expect(Delegate(stored: older)?.disabled == true)
    }
}
