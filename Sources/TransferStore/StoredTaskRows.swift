import Dispatch
import JSON
import TransferModel

/// Tasks as a store reads them back: the row's columns and the stored document, decoded together.
package enum StoredTaskRows {
    /// Decoding the documents is most of a start-up with many unfinished tasks (tens of thousands
    /// scheduled for later), so it is spread over the cores; a row whose document does not decode
    /// is left out.
    package static func decode(_ rows: [(columns: TaskColumns, document: [UInt8])]) -> [TaskRecord] {
        var decoded = [TaskRecord?](repeating: nil, count: rows.count)
        // A few more pieces than cores; concurrentPerform runs them on as many threads as there are.
        let workers = max(1, min(16, rows.count / 512))
        decoded.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let slots = buffer  // each worker writes only its own indexes
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                for i in stride(from: worker, to: rows.count, by: workers) {
                    slots[i] = (try? JSONParser.parse(rows[i].document)).flatMap { TaskRecord(stored: $0, columns: rows[i].columns) }
                }
            }
        }
        return decoded.compactMap { $0 }
    }
}
