import Glibc
import TransferEngine
import TransferModel

/// Request bodies: checked when a task is created, found when its transfer is handed to the engine,
/// opened when the engine admits it.
extension TaskFiles {
    /// Inline bodies up to this size stay in the task record (and so in its SQLite row); larger
    /// ones of durable sessions are spooled to a blob file, so no task document carries megabytes.
    static let largestInlineBody = 4096

    /// Every referenced body must exist now: a blob by id (one stored by `blobOwner`, unless that
    /// is nil), a file beneath one of `roots` (the caller's), a finished download of the same
    /// session. Checked at creation, so a typo is a 4xx, not a failed task later.
    func checkBodySources(_ requests: [TaskCreationRequest], in session: SessionState, roots: AllowedRoots,
                                  blobOwner: String?) throws(Refusal)
    {
        for (i, request) in requests.enumerated() {
            let prefix = requests.count > 1 ? "tasks[\(i)]." : ""
            switch request.body {
            case .blob(let id, _)?:
                let field = prefix + (request.kind == .upload ? "upload.from_blob" : "request.body.blob")
                // Another principal's blob is refused as if it did not exist.
                guard let blob = try? blobs?.lookup(id), blob.owner == nil, blobOwner == nil || blob.principal == blobOwner else {
                    throw Refusal(.invalid, "blob_not_found", "blob \(id) does not exist", field: field)
                }
            case .file(let path)?:
                let field = prefix + "upload.from_file"
                let fd = try roots.openSourceFile(path, field: field)
                close(fd)
            case .task(let id)?:
                let field = prefix + "upload.from_task"
                guard let source = try Refusal.absentIfNotFound({ () throws(Refusal) in try journal.record(session, id) }) else {
                    throw Refusal(.invalid, "task_not_found", "task \(id) does not exist in this session", field: field)
                }
                guard source.kind == .download, source.result != nil else {
                    throw Refusal(.invalid, "file_not_available", "task \(id) is not a finished download", field: field)
                }
            case .inline?, nil:
                break
            }
        }
    }

    /// Writes the large inline bodies of durable sessions' new tasks to blob files (blocking: call
    /// off the event loops); the records then refer to their own blobs, committed with them.
    func spoolLargeBodies(_ records: inout [TaskRecord], session: SessionState) throws(TaskFileError) -> [Blob] {
        guard session.mode.isDurable, let blobs else { return [] }
        var spooled: [Blob] = []
        for i in records.indices {
            guard case .inline(let bytes)? = records[i].body, bytes.count > TaskFiles.largestInlineBody else { continue }
            let blob = try blobs.writeFile(bytes, owner: "\(session.identifier)/\(records[i].id)")
            records[i].body = .blob(id: blob.id, owned: true)
            spooled.append(blob)
        }
        return spooled
    }

    /// The request body of a starting transfer, found but not opened: the store is asked about a
    /// source task here, off the curl loop; the files are opened once the engine admits the
    /// transfer (`openBody`). A multipart body gets its boundary, for the `Content-Type`, now.
    func planBody(for record: TaskRecord, session: SessionState) throws(TaskError) -> TaskBody {
        guard let body = record.body else { return TaskBody(content: nil, multipart: nil) }
        let content: TaskBody.Content
        var filename: String?
        switch body {
        case .inline(let bytes):
            content = .bytes(bytes)
        case .blob(let id, _):
            guard let blobs else { throw TaskError(code: .fileDoesNotExist, message: "blob \(id) is gone") }
            content = .kept(path: blobs.path(id), what: "blob \(id)")
        case .file(let path):
            content = .clientFile(path: path)
            filename = path.split(separator: "/").last.map(String.init)
        case .task(let id):
            guard let source = try? journal.record(session, id), let result = source.result else {
                throw TaskError(code: .fileDoesNotExist, message: "the download of task \(id) is gone")
            }
            content = source.destination != nil ? .destination(path: result.location)
                : .kept(path: result.location, what: "the download of task \(id)")
            filename = source.response?.suggestedFilename
        }
        let multipart = record.multipart.map { MultipartBody(spec: $0, defaultFilename: filename ?? "file") }
        return TaskBody(content: content, multipart: multipart)
    }

    /// Opens a planned body's file, wrapped in its multipart parts if it has them. On the curl
    /// loop, as the transfer is admitted: opening beneath a root is a few `openat`s.
    func openBody(_ body: TaskBody) throws(TaskError) -> RequestBodySource {
        let segment: BodySegment
        switch body.content {
        case nil:
            return .none
        case .bytes(let bytes)?:
            guard body.multipart != nil else { return .bytes(bytes) }
            segment = .bytes(bytes)
        case .kept(let path, let what)?:
            segment = try openWhole(path, what: what)
        case .clientFile(let path)?:
            do {
                let fd = try allowedRoots.openSourceFile(path, field: "upload.from_file")
                segment = .file(fd: fd, offset: 0, length: TaskFiles.size(of: fd))
            } catch {
                throw TaskError(code: error.code == "file_does_not_exist" ? .fileDoesNotExist : .cannotOpenFile,
                                message: error.detail)
            }
        case .destination(let path)?:
            guard let fd = try? allowedRoots.openFile(path, flags: O_RDONLY) else {
                throw TaskError(code: .fileDoesNotExist, message: "\(path) is gone")
            }
            segment = .file(fd: fd, offset: 0, length: TaskFiles.size(of: fd))
        }
        return .segments(body.multipart?.wrap(segment) ?? [segment])
    }

    private func openWhole(_ path: String, what: String) throws(TaskError) -> BodySegment {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw TaskError(code: .fileDoesNotExist, message: "\(what) is gone") }
        return .file(fd: fd, offset: 0, length: TaskFiles.size(of: fd))
    }

    static func size(of fd: Int32) -> Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }
}

extension TaskError: Error {}

/// Where a task's request body comes from, resolved when its transfer is handed to the engine.
struct TaskBody: Sendable {
    enum Content: Sendable {
        case bytes([UInt8])
        /// A file transferd keeps (a blob, a download in the session's directory).
        case kept(path: String, what: String)
        /// A client's `from_file`, opened beneath its allowed root and checked to be a regular file.
        case clientFile(path: String)
        /// A finished download at a client's `download.destination`.
        case destination(path: String)
    }

    /// nil: the request has no body.
    let content: Content?
    let multipart: MultipartBody?

    /// The `Content-Type` a multipart body replaces the task's with.
    var contentType: String? { multipart?.contentType }
}
