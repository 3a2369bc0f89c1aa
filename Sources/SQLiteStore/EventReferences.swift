import Store
import TransferModel
import TransferStore

/// The events of a batch kept as references to their task's row (migration 31): an event about a
/// task that the same batch completes, whose data is the member of the completed record it stands
/// for (`TaskRecord.eventData`) — byte for byte, so reading it back from the row gives what was
/// journaled. A completion's `task.completed` (over a kilobyte: the whole task) and the
/// `task.finished_downloading` and `task.response_received` committed with it are then stored once,
/// in the row.
struct EventReferences {
    private struct TaskKey: Hashable {
        let session: String
        let id: String
    }

    private struct EventKey: Hashable {
        let session: String
        let seq: Int64
    }

    private var events: Set<EventKey> = []
    private var bounds: [TaskKey: ClosedRange<Int64>] = [:]

    /// Events are matched with the completion before them in the batch (a completion's events
    /// follow its update). A task whose row the batch changes again after its completion gets no
    /// references: simple, and no completion's batch does that.
    init(_ changes: [StoreChange]) {
        var completed: [TaskKey: TaskRecord] = [:]
        var touchedAgain: Set<TaskKey> = []
        func touch(_ key: TaskKey) { if completed[key] != nil || bounds[key] != nil { touchedAgain.insert(key) } }
        for change in changes {
            switch change {
            case .updateTask(let record, _):
                let key = TaskKey(session: record.session, id: record.id)
                touch(key)
                if record.isCompleted { completed[key] = record }
            case .updateTaskKeepingState(let record, _):
                touch(TaskKey(session: record.session, id: record.id))
            case .updateState(let session, let id, _, _), .updateDetails(let session, let id, _, _), .deleteTask(let session, let id):
                touch(TaskKey(session: session, id: id))
            case .insertEvents(let batch) where !completed.isEmpty:
                for event in batch {
                    guard let task = event.task else { continue }
                    let key = TaskKey(session: event.session, id: task)
                    guard let record = completed[key], EventReferences.mirrors(event, record) else { continue }
                    events.insert(EventKey(session: event.session, seq: event.seq))
                    bounds[key] = bounds[key].map { min($0.lowerBound, event.seq)...max($0.upperBound, event.seq) } ?? event.seq...event.seq
                }
            default: continue
            }
        }
        for key in touchedAgain { drop(session: key.session, id: key.id) }
    }

    /// Whether `event`'s data is the member of `record` it stands for. A `task.completed` or
    /// `task.finished_downloading` in its task's completion batch is the completed record itself
    /// or its result — their one producer (`TaskRunner.completionEvents`) encodes the record it
    /// commits — and encoding it again to prove it cost the writer more than the rest of the
    /// batch's bookkeeping. A `task.response_received` was encoded from the head as it arrived,
    /// which the record may have replaced since: it is compared byte for byte.
    private static func mirrors(_ event: Event, _ record: TaskRecord) -> Bool {
        if event.type == .taskCompleted || event.type == .taskFinishedDownloading { return true }
        guard let data = record.eventData(event.type) else { return false }
        return data == event.data
    }

    /// No row was there to refer to after all: `record`'s events keep their data.
    mutating func drop(_ record: TaskRecord) { drop(session: record.session, id: record.id) }

    private mutating func drop(session: String, id: String) {
        guard let range = bounds.removeValue(forKey: TaskKey(session: session, id: id)) else { return }
        for seq in range { events.remove(EventKey(session: session, seq: seq)) }
    }

    func isReference(_ event: Event) -> Bool {
        !events.isEmpty && events.contains(EventKey(session: event.session, seq: event.seq))
    }

    /// The seqs of `record`'s events stored as references to its row.
    func range(of record: TaskRecord) -> ClosedRange<Int64>? {
        bounds.isEmpty ? nil : bounds[TaskKey(session: record.session, id: record.id)]
    }
}

extension EventReferences {
    /// Writes out the data of the events that refer to a task's row, from the row as it is, before
    /// the row changes or goes.
    static func writeOut(session: String, task id: String, _ db: Database) throws {
        let row = try db.statement("""
            SELECT refs_from, refs_to, \(TaskSQL.recordColumns) FROM tasks WHERE session = ? AND id = ? AND refs_from IS NOT NULL
            """)
        try row.bind(.text(session), .text(id))
        defer { row.reset() }
        guard try row.step() else { return }
        let (from, to) = (row.int64(0), row.int64(1))
        let task = TaskSQL.decode(row, from: 2)
        row.reset()
        try db.statement("UPDATE tasks SET refs_from = NULL, refs_to = NULL WHERE session = ? AND id = ?").bind(.text(session), .text(id)).run()
        guard let number = try EventRows.number(of: session, create: false, db) else { return }
        let refs = try db.statement("SELECT seq, type FROM events WHERE session = ? AND seq BETWEEN ? AND ? AND task = ? AND data = ''")
        try refs.bind(.integer(number), .integer(from), .integer(to), .text(id))
        var found: [(seq: Int64, data: [UInt8])] = []
        while try refs.step() {
            let data = EventRows.types[refs.int64(1)].flatMap { task?.eventData($0) }
            found.append((refs.int64(0), data ?? Array("null".utf8)))
        }
        refs.reset()
        let write = try db.statement("UPDATE events SET data = ? WHERE session = ? AND seq = ?")
        for (seq, data) in found { try write.bind(.utf8(data), .integer(number), .integer(seq)).run() }
    }
}
