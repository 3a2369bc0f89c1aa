import Testing
@testable import TransferModel
@testable import TransferStore

/// What an `InMemoryTransferStore` may forget when asked to (ephemeral sessions): events nobody
/// needs any more, webhook attempts beyond the most recent.
struct InMemoryStoreOptionsTests {
    typealias F = Fixture

    func store(_ options: InMemoryTransferStore.Options, delegate: Delegate? = nil) throws -> InMemoryTransferStore {
        let store = InMemoryTransferStore(options: options)
        var row = F.session()
        row.delegate = delegate?.stored
        try store.apply([.upsertSession(row), .insertEvents((1...4).map { F.event($0) })])
        return store
    }

    func seqs(_ store: InMemoryTransferStore) throws -> [Int64] {
        try store.events(session: "s1", after: 0, limit: 10).map(\.seq)
    }

    @Test func acknowledgedEventsAreTrimmedWithoutADelegate() throws {
        let store = try store(InMemoryTransferStore.Options(trimsAcknowledgedEvents: true))
        defer { store.close() }
        try store.apply([.setAcked(session: "s1", through: 2)])
        #expect(try seqs(store) == [3, 4])
        try store.apply([.setAcked(session: "s1", through: 4)])
        #expect(try seqs(store).isEmpty)
        // Numbering continues after the trimmed events, not over them.
        #expect(try store.loadSessions().first?.lastEventSeq == 4)
        try store.apply([.insertEvents([F.event(5)])])
        #expect(try seqs(store) == [5])
    }

    @Test func anEnabledDelegateKeepsWhatItHasNotDelivered() throws {
        let delegate = Delegate(url: "https://example.com/hook", secret: "s", events: nil)
        let store = try store(InMemoryTransferStore.Options(trimsAcknowledgedEvents: true), delegate: delegate)
        defer { store.close() }
        try store.apply([.setAcked(session: "s1", through: 4), .setDelivered(session: "s1", through: 1)])
        #expect(try seqs(store) == [2, 3, 4])
        try store.apply([.setDelivered(session: "s1", through: 3)])
        #expect(try seqs(store) == [4])

        // Once the delegate is disabled nothing waits for delivery: acknowledged is enough.
        var row = F.session()
        row.delegate = Delegate(url: delegate.url, secret: "s", events: nil, disabled: true).stored
        try store.apply([.upsertSession(row)])
        #expect(try seqs(store).isEmpty)
    }

    @Test func withoutTheOptionAcknowledgedEventsStay() throws {
        let store = try store(InMemoryTransferStore.Options())
        defer { store.close() }
        try store.apply([.setAcked(session: "s1", through: 4)])
        #expect(try seqs(store) == [1, 2, 3, 4])
    }

    @Test func eachSessionKeepsItsMostRecentAttempts() throws {
        let store = try store(InMemoryTransferStore.Options(attemptsKept: 3))
        defer { store.close() }
        try store.apply([.recordAttempts((1...4).map { F.attempt($0) } + [F.attempt(1, session: "s2")])])
        try store.apply([.recordAttempts([F.attempt(5)])])
        let kept = try store.attempts(session: "s1", after: 0, limit: 10)
        #expect(kept.map(\.attempt.seq) == [3, 4, 5])
        #expect(kept.map(\.position) == kept.map(\.position).sorted())
        #expect(try store.attempts(session: "s2", after: 0, limit: 10).map(\.attempt.seq) == [1])
    }
}
