import Digests
import Glibc
import Lifecycles
import TransferModel
import TransferStore

/// What a creation call came to.
package enum CreationOutcome: Sendable {
    /// The new tasks' ids, and the tasks encoded as the API returns them (as they were when created).
    case created([(id: String, reply: [UInt8])])
    /// The same `Idempotency-Key` and body as an earlier call: its task's id and the reply that
    /// created it, byte for byte.
    case replayed(id: String, reply: [UInt8])
}

/// An `Idempotency-Key` with the sha256 of the body it came with.
package struct IdempotencyClaim: Sendable {
    package let key: String
    let bodyHash: String

    package init(key: String, bodyHash: String) {
        self.key = key
        self.bodyHash = bodyHash
    }
}

/// Creating tasks, all or none: checked, reserved, committed in one group, then shown and started.
/// A retried creation with the same `Idempotency-Key` is answered with the first one's reply.
struct TaskCreation: Sendable {
    let runner: TaskRunner
    /// What the new tasks compute when they do not say.
    let defaultDigests: [DigestAlgorithm]

    private var journal: TaskJournal { runner.journal }
    private var files: TaskFiles { runner.files }
    private var retirement: SessionRetirement { runner.retirement }

    /// Verifies each `resume_data` and takes from it what the request left out: the URL and the
    /// destination. A tampered token is 422 `resume_data_invalid`.
    func resolveResumeData(_ requests: inout [TaskCreationRequest]) throws(Refusal) {
        for i in requests.indices {
            guard let token = requests[i].resumeToken else { continue }
            var data: ResumeData
            do {
                data = try ResumeData.parse(token, key: files.resumeKey)
            } catch {
                var located = error
                if requests.count > 1 { located.field = "tasks[\(i)].resume_data" }
                throw located
            }
            if requests[i].url.isEmpty { requests[i].url = data.url } else { data.url = requests[i].url }
            if requests[i].destination == nil { requests[i].destination = data.destination }
            requests[i].resumeFrom = data
        }
    }

    /// A `download.destination` must lie inside one of `roots` (the caller's; no `..`, no symlink
    /// out) and its directory must exist: checked when the task is created, so a bad path is a 4xx
    /// now rather than a failed task later.
    /// A batch's destinations mostly share a directory, which is opened once for all of them.
    func checkDestinations(_ requests: [TaskCreationRequest], roots: AllowedRoots) throws(Refusal) {
        var opened: Set<String> = []
        for (i, request) in requests.enumerated() {
            guard let destination = request.destination else { continue }
            let field = requests.count > 1 ? "tasks[\(i)].download.destination" : "download.destination"
            do {
                let place = try roots.place(of: destination)
                guard opened.insert(place.directoryKey).inserted else { continue }
                close(try roots.openDirectory(of: place))
            } catch .notAllowed {
                throw Refusal(.forbidden, "path_not_allowed", "\(destination) is not inside a path the caller may use (--allow-path, or its allow_paths)", field: field)
            } catch .missing {
                throw Refusal.invalid(field, "the directory of \(destination) does not exist")
            } catch {
                throw Refusal(.forbidden, "path_not_allowed", "\(destination) cannot be opened inside its root", field: field)
            }
        }
    }

    /// The answer to a retried creation, when `claim`'s key made a task that is still kept — in
    /// memory, or only in the store (completed and dropped from memory, or from before a restart) —
    /// else nil. Asked before the request is checked against anything that may have changed since
    /// (quotas, paths, blobs) and before anything is reserved: a replay numbers no event and writes
    /// nothing. (`createTasks` catches the retries that overtake it.) A task only in the store is
    /// looked up on the store's readers, and `answer` runs there.
    func replay(in session: SessionState, _ claim: IdempotencyClaim, answer: @escaping @Sendable (Result<CreationOutcome?, Refusal>) -> Void) {
        let (held, inMemory) = session.locked { () -> (Bool, TaskRecord?) in
            guard let entry = session.task(withIdempotencyKey: claim.key) else { return (false, nil) }
            return (true, entry.lifecycle.isDeleted ? nil : entry.record)
        }
        let replayed: @Sendable (TaskRecord?) -> Result<CreationOutcome?, Refusal> = { existing in
            existing.map { TaskCreation.replay(of: $0, claim).map { $0 } } ?? .success(nil)
        }
        if held { return answer(replayed(inMemory)) }
        journal.readStore(journal.store(of: session), { try $0.loadTask(session: session.identifier, idempotencyKey: claim.key) }) {
            answer($0.flatMap(replayed))
        }
    }

    /// Creates tasks, all or none: ids are reserved in memory, the rows committed in one group,
    /// and only then do the tasks become visible and start. A 201 therefore means stored.
    func createTasks(in session: SessionState, _ requests: [TaskCreationRequest], idempotency: IdempotencyClaim?,
                     completion: @escaping @Sendable (Result<CreationOutcome, Refusal>) -> Void)
    {
        let now = runner.clock.now()
        let reservation: Reservation = session.locked {
            if let refusal = SessionRetirement.refusal(retirement.lifecycleActions(session, .createTasks),
                                                     "session \(session.identifier) is invalidated; it takes no new tasks") {
                return .refused(refusal)
            }
            if let idempotency {
                if let existing = session.task(withIdempotencyKey: idempotency.key), !existing.lifecycle.isDeleted {
                    return .replay(TaskCreation.replay(of: existing.record, idempotency))
                }
                if session.reservedKeys.contains(idempotency.key) {
                    return .refused(Refusal(.conflict, "idempotency_key_in_use", "a request with this Idempotency-Key is in progress; retry shortly"))
                }
            }
            var ids: [String] = []
            var seen = Set<String>()
            for (i, request) in requests.enumerated() {
                // A generated id is random (`RandomID`): only a client's own choice can collide.
                guard let id = request.id else {
                    ids.append(TaskCreation.newTaskID())
                    continue
                }
                if session.tasks[id] != nil || session.reservedIDs.contains(id) || !seen.insert(id).inserted {
                    let field = requests.count > 1 ? "tasks[\(i)].id" : "id"
                    return .refused(Refusal(.conflict, "task_exists", "a task with id \(id) already exists in this session", field: field))
                }
                ids.append(id)
            }
            session.reservedIDs.formUnion(ids)
            if let idempotency { session.reservedKeys.insert(idempotency.key) }
            let first = session.nextSequence
            session.nextSequence += Int64(requests.count)
            // Before the `task.created` events are numbered: their deliveries may start as soon as
            // they are committed, before the tasks are added to memory, and must find the trace
            // (in the store by then) rather than skip the lookup.
            if requests.contains(where: { $0.traceparent != nil }) { session.tracesTasks = true }
            return .reserved(zip(requests, ids).enumerated().map { i, pair in
                TaskCreation.makeRecord(pair.0, id: pair.1, session: session, sequence: first + Int64(i),
                                           defaultDigests: defaultDigests, now: now,
                                           idempotency: idempotency)
            })
        }
        let records: [TaskRecord]
        switch reservation {
        case .refused(let error): return completion(.failure(error))
        case .replay(let answer): return completion(answer)
        case .reserved(let r): records = r
        }
        let needsSpooling = session.mode.isDurable && records.contains {
            if case .inline(let b)? = $0.body { return b.count > TaskFiles.largestInlineBody }
            return false
        }
        guard needsSpooling else { return insert(records, spooled: [], in: session, idempotency: idempotency, completion: completion) }
        files.fileWork.async { [self, records] in
            var spooledRecords = records
            do throws(TaskFileError) {
                let spooled = try files.spoolLargeBodies(&spooledRecords, session: session)
                insert(spooledRecords, spooled: spooled, in: session, idempotency: idempotency, completion: completion)
            } catch {
                session.locked { session.endReservation(ids: records.lazy.map(\.id), key: idempotency?.key) }
                completion(.failure(Refusal(.insufficientStorage, "insufficient_storage", "cannot store the request body: \(error.message)")))
            }
        }
    }

    /// Commits reserved tasks (and the blobs their bodies were spooled to), then makes them
    /// visible and starts those that run.
    private func insert(_ reserved: [TaskRecord], spooled: [Blob], in session: SessionState, idempotency: IdempotencyClaim?,
                        completion: @escaping @Sendable (Result<CreationOutcome, Refusal>) -> Void)
    {
        // Encoded here, not on the writer thread: the replies and the rows. A task created with a
        // key keeps its reply, for the retries.
        let replies = reserved.map { $0.jsonBytes() }
        let records = idempotency == nil ? reserved : zip(reserved, replies).map { record, reply in
            var kept = record
            kept.creationReply = reply
            return kept
        }
        let documents = records.map { $0.storageDocument() }
        journal.persist(session, events: records.map { EventDraft.summary($0, .taskCreated) },
                spooled.map { .insertBlob($0) } + [.insertTasks(records, documents: documents)]) { [self] result in
            if case .failure = result, let blobs = files.blobs {
                for blob in spooled { unlink(blobs.path(blob.id)) }
            }
            session.locked { session.endReservation(ids: records.lazy.map(\.id), key: idempotency?.key) }
            switch result {
            case .success:
                let created = session.locked { () -> [(TaskEntry, [TaskLifecycle.Action])] in
                    records.map { record in
                        let entry = TaskEntry(record: record, lifecycle: TaskLifecycle())
                        session.addTask(entry)
                        session.count(from: nil, to: record.state)
                        return (entry, runner.step(entry, .created(start: record.state == .running)))
                    }
                }
                // Starting finds bodies and takes over partial files: file work, off the store's
                // completion queue. Answered once started, as before the hop.
                runner.files.fileWork.async { [runner] in
                    for (entry, actions) in created { runner.perform(actions, of: entry, in: session) }
                    completion(.success(.created(zip(records, replies).map { (id: $0.id, reply: $1) })))
                }
            case .failure(StoreError.conflict(let existing)):
                // A task `replay(in:)` did not see: stored meanwhile, by a retry that overtook this one.
                if let idempotency, existing.idempotencyKey == idempotency.key {
                    completion(TaskCreation.replay(of: existing, idempotency))
                } else {
                    completion(.failure(Refusal(.conflict, "task_exists", "a task with id \(existing.id) already exists in this session")))
                }
            case .failure(let error):
                completion(.failure(Refusal.storeFailure(error)))
            }
            retirement.checkInvalidation(session)
        }
    }

    static func makeRecord(_ request: TaskCreationRequest, id: String, session: SessionState, sequence: Int64, defaultDigests: [DigestAlgorithm],
                           now: Timestamp, idempotency: IdempotencyClaim?) -> TaskRecord
    {
        var record = TaskRecord(session: session.identifier, id: id, sequence: sequence, kind: request.kind,
                                url: request.url, method: request.method, createdAt: now)
        record.state = request.start ? .running : .suspended
        record.phase = .waiting
        record.priority = request.priority
        record.description = request.description
        record.headers = request.headers
        record.sensitiveHeaders = session.configuration.sensitiveHeaders
        record.body = request.body
        record.multipart = request.multipart
        record.sendDigest = request.sendDigest
        record.resumable = request.resumable
        record.destination = request.destination
        record.checksum = request.checksum
        record.digests = request.digests ?? defaultDigests
        record.maxBytes = request.maxBytes
        record.beginAt = request.beginAt
        record.currentURL = request.url
        record.resumeFrom = request.resumeFrom
        record.validator = request.resumeFrom?.validator
        record.idempotencyKey = idempotency?.key
        record.idempotencyHash = idempotency?.bodyHash
        record.traceparent = request.traceparent
        if case .inline(let bytes)? = request.body { record.progress.bytesExpectedToSend = Int64(bytes.count) }
        return record
    }

    static func newTaskID() -> String { RandomID.make() }

    /// The answer to a retry of the creation of `existing`: its first reply, when the body is the
    /// same. A task stored before replies were kept with their tasks has only its current state.
    static func replay(of existing: TaskRecord, _ idempotency: IdempotencyClaim) -> Result<CreationOutcome, Refusal> {
        guard existing.idempotencyHash == idempotency.bodyHash else { return .failure(Refusal.idempotencyKeyReused(idempotency.key)) }
        return .success(.replayed(id: existing.id, reply: existing.creationReply ?? existing.jsonBytes()))
    }
}

private enum Reservation {
    case reserved([TaskRecord])
    case replay(Result<CreationOutcome, Refusal>)
    case refused(Refusal)
}

extension Refusal {
    static func idempotencyKeyReused(_ key: String) -> Refusal {
        Refusal(.invalid, "idempotency_key_reused", "Idempotency-Key \(key) was used with a different request body")
    }
}
