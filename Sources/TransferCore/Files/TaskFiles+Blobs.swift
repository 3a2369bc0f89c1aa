import Glibc
import TransferModel

/// Client blobs, as the API sees them.
extension TaskFiles {
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

    /// `DELETE /v1/blobs/{id}`: refused while a task that has not completed still needs it.
    package func deleteBlob(_ blob: Blob, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        if let user = unfinishedTask(using: blob.id) {
            return completion(.failure(Refusal(.conflict, "blob_in_use", "task \(user) has not completed and needs blob \(blob.id)")))
        }
        blobs?.delete(blob.id) { result in completion(result.mapError(Refusal.storeFailure)) }
    }

    /// `session/task` of an unfinished task whose body is the blob (every unfinished task is in memory).
    func unfinishedTask(using blobID: String) -> String? {
        for session in journal.registry.all {
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
}
