import TestSupport
import Testing
@testable import TransferCore
@testable import TransferModel

/// An ephemeral session is kept by the coordinator's in-memory store, never the durable one, and
/// its journal keeps only what is still to be read.
struct EphemeralSessionTests {
    @Test func itsJournalStaysOutOfTheDurableStoreAndIsTrimmedOnAcknowledgement() throws {
        try CoreHarness.withSession(.ephemeral) { origin, core, session in
            let id = try core.download(origin.url("/bytes/1000"), in: session)
            #expect(try core.completed(id, in: session).error == nil)
            try core.awaitEvent(.sessionAllTasksFinished, in: session)

            #expect(try core.store.loadSessions().isEmpty)
            #expect(try core.storedEvents(of: "s").isEmpty)
            #expect(try core.coordinator.events(of: session, after: 0, limit: 100).count == 5)

            try CoreHarness.wait { core.coordinator.acknowledge(session, through: 3, completion: $0) }.get()
            #expect(try core.coordinator.events(of: session, after: 0, limit: 100).map(\.seq) == [4, 5])
        }
    }
}
