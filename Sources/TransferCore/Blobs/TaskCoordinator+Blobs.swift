import Glibc
import TransferModel

extension TaskCoordinator {
    /// A client's blob (spooled bodies are the tasks' own and not reachable here).
    package func blob(_ id: String) throws(Refusal) -> Blob {
        let found: Blob?
        do {
            found = try blobs?.lookup(id)
        } catch {
            throw Refusal.storeFailure(error)
        }
        guard let blob = found, blob.owner == nil else { throw Refusal.notFound("blob \(id)") }
        return blob
    }

    /// `blob(_:)` for a caller on an event loop: read on the store's readers, answered there.
    package func blob(_ id: String, answer: @escaping @Sendable (Result<Blob, Refusal>) -> Void) {
        onReaders { [self] in answer(Result { () throws(Refusal) in try blob(id) }) }
    }

    /// `DELETE /v1/blobs/{id}`: refused while a task that has not completed still needs it.
    package func deleteBlob(_ blob: Blob, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        if let user = unfinishedTask(using: blob.id) {
            return completion(.failure(Refusal(.conflict, "blob_in_use", "task \(user) has not completed and needs blob \(blob.id)")))
        }
        blobs?.delete(blob.id) { result in completion(result.mapError(Refusal.storeFailure)) }
    }

    /// `session/task` of an unfinished task whose body is the blob (every unfinished task is in memory).
    func unfinishedTask(using blobID: String) -> String? {
        for session in registry.all {
            let user: String? = session.locked {
                session.tasks.values.first { entry in
                    guard !entry.record.isCompleted, case .blob(blobID, _)? = entry.record.body else { return false }
                    return true
                }?.record.id
            }
            if let user { return "\(session.identifier)/\(user)" }
        }
        return nil
    }

    /// A completed or deleted task's own spooled body goes with it: its row (in the caller's
    /// transaction) now, its file once that committed.
    static func ownedBlob(of record: TaskRecord) -> String? {
        if case .blob(let id, true)? = record.body { return id }
        return nil
    }

    func removeOwnedBlobFile(of record: TaskRecord) {
        guard let id = TaskCoordinator.ownedBlob(of: record), let blobs else { return }
        unlink(blobs.path(id))
    }
}
