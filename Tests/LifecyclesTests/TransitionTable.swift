import Testing
@testable import Lifecycles

/// A lifecycle's transition table, checked pair by pair: every state is told every event. A pair
/// the table lists must answer exactly its actions and reach what `reached` accepts; a pair it
/// does not list must answer `.invalid` and leave the value as it was.
struct TransitionTable<Machine: Lifecycle, Key: Equatable> {
    struct Row {
        let from: Key
        let event: Machine.Event
        let actions: [Machine.Action]
        /// Whether the value after the event is the one the row expects.
        let reached: (Machine) -> Bool
    }

    let states: [(key: Key, value: Machine)]
    let events: [Machine.Event]
    let rows: [Row]

    /// Walks every pair; returns how many were walked.
    func checkEveryPair(sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        var pairs = 0
        for (key, start) in states {
            for event in events {
                pairs += 1
                let listed = rows.filter { $0.from == key && $0.event == event }
                #expect(listed.count <= 1, "\(key) + \(event) is listed twice", sourceLocation: sourceLocation)
                var machine = start
                let outcome = machine.handle(event)
                guard let row = listed.first else {
                    #expect(outcome == .invalid(from: start, event: event), "\(key) + \(event)", sourceLocation: sourceLocation)
                    #expect(machine == start, "an invalid \(event) changed \(key)", sourceLocation: sourceLocation)
                    continue
                }
                #expect(outcome == .perform(row.actions), "\(key) + \(event)", sourceLocation: sourceLocation)
                #expect(row.reached(machine), "\(key) + \(event) reached \(machine)", sourceLocation: sourceLocation)
            }
        }
        return pairs
    }
}
