import CLinux
import Dispatch
import Reactor

/// Makes finished outputs of durable sessions durable in groups, the way the store commits its
/// records: whatever finished while one group was being made durable forms the next group. A
/// group makes its files' bytes durable with one `syncfs` per file system (a lone file with its
/// own fsync), names each file, then fsyncs each directory once however many files it received.
/// Each file's completion is reported only after its whole group is durable.
///
/// One `syncfs` rather than an fsync per file: each fsync ends in a flush of the device's cache,
/// and one at a time they made 1,000 small completions wait in line for hundreds of milliseconds.
/// A `syncfs` also writes whatever else is dirty on that file system; large downloads start
/// their writeback every 32 MiB, so that is bounded.
///
/// One group at a time: a group takes what is pending when it starts, so under load groups grow
/// and the fsyncs per file fall; an idle service commits a lone file at once.
final class OutputCommitter: Sendable {
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

    /// Makes every file's bytes durable, names each, fsyncs each directory once.
    static func commitGroup(_ group: [(TaskOutput, Completion)]) {
        var errors = syncData(group.map(\.0))
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

    /// The files' bytes on the device: a lone file by its fsync; several by one `syncfs` per file
    /// system they are on. Should a `syncfs` report an error (a write-back that failed on that
    /// file system), each of its files is fsynced, to find whose bytes are not durable.
    private static func syncData(_ outputs: [TaskOutput]) -> [TaskFileError?] {
        var errors = [TaskFileError?](repeating: nil, count: outputs.count)
        guard outputs.count > 1 else {
            if let output = outputs.first { do { try output.syncData() } catch { errors[0] = error } }
            return errors
        }
        var byDevice: [UInt64: [Int]] = [:]
        // A file was made in its directory, on the directory's file system: one fstat a directory.
        var devices: [String: UInt64] = [:]
        for (i, output) in outputs.enumerated() {
            let device = devices[output.directoryPath] ?? output.device
            devices[output.directoryPath] = device
            byDevice[device, default: []].append(i)
        }
        for indices in byDevice.values where syncfs(outputs[indices[0]].fd) != 0 {
            for i in indices {
                do { try outputs[i].syncData() } catch { errors[i] = error }
            }
        }
        return errors
    }
}
