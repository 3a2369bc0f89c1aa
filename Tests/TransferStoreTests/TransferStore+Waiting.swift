import Dispatch
@testable import SQLiteStore
@testable import TransferModel
@testable import TransferStore

/// A committed batch's outcome, handed from the store's completion to the waiting test.
private final class Outcome: @unchecked Sendable {
    var result: Result<CommitReport, Error>?
    let done = DispatchSemaphore(value: 0)
}

extension TransferStore {
    /// Commits `changes` and waits for the outcome.
    @discardableResult
    func apply(_ changes: [StoreChange]) throws -> CommitReport {
        try applyAll([changes])[0].get()
    }

    /// Submits the batches one after another without waiting between them (so a store may commit
    /// them together), then waits for all of their outcomes.
    func applyAll(_ batches: [[StoreChange]]) -> [Result<CommitReport, Error>] {
        let outcomes = batches.map { _ in Outcome() }
        for (batch, outcome) in zip(batches, outcomes) {
            commit(batch) { result in
                outcome.result = result
                outcome.done.signal()
            }
        }
        return outcomes.map { outcome in
            outcome.done.wait()
            return outcome.result!
        }
    }
}
