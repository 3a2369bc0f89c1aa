import Dispatch
import Reactor

/// Makes finished outputs of durable sessions durable in groups, the way the store commits its
/// records: whatever finished while one group was being made durable forms the next group. A
/// group starts the writeback of every file before waiting for any (the device works on all of
/// them at once), names each file, then fsyncs each directory once however many files it
/// received. Each file's completion is reported only after its whole group is durable.
///
/// One group at a time: a group takes what is pending when it starts, so under load groups grow
/// and the fsyncs per file fall; an idle service commits a lone file at once.
final class OutputCommitter: @unchecked Sendable {
    typealias Completion = @Sendable (TaskFileError?) -> Void

    /// Where groups are committed: a thread of their own, as fsync blocks.
    private let queue = DispatchQueue(label: "transferd.output-commits")
    private let state = Locked<(pending: [(TaskOutput, Completion)], running: Bool)>(([], false))

    /// Makes `output` durable under its final name, then calls `done` (nil: done; otherwise the
    /// error, and the file is still the caller's to discard).
    func commit(_ output: TaskOutput, then done: @escaping Completion) {
        let start = state.withLock { state in
            state.pending.append((output, done))
            defer { state.running = true }
            return !state.running
        }
        if start { queue.async { [self] in drain() } }
    }

    private func drain() {
        while let group = nextGroup() {
            OutputCommitter.commitGroup(group)
        }
    }

    private func nextGroup() -> [(TaskOutput, Completion)]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.running = false
                return nil
            }
            defer { state.pending.removeAll(keepingCapacity: true) }
            return state.pending
        }
    }

    /// fsync every file (writeback started for all first), name each, fsync each directory once.
    static func commitGroup(_ group: [(TaskOutput, Completion)]) {
        var errors = [TaskFileError?](repeating: nil, count: group.count)
        for (output, _) in group { output.startWriteback() }
        for (i, (output, _)) in group.enumerated() {
            do { try output.syncData() } catch { errors[i] = error }
        }
        for (i, (output, _)) in group.enumerated() where errors[i] == nil {
            do { try output.publish() } catch { errors[i] = error }
        }
        var directories: [String: TaskFileError?] = [:]
        for (i, (output, _)) in group.enumerated() where errors[i] == nil {
            if let synced = directories[output.directoryPath] {
                errors[i] = synced
                continue
            }
            do { try output.syncDirectory() } catch { errors[i] = error }
            directories[output.directoryPath] = errors[i]
        }
        for (i, (output, done)) in group.enumerated() {
            // A file that failed keeps its directory open for the caller's `discard`.
            if errors[i] == nil { output.closeDirectory() }
            done(errors[i])
        }
    }
}
