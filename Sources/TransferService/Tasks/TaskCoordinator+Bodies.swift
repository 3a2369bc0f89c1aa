import Glibc
import TransferEngine

/// Request bodies: checked when a task is created, opened when its transfer starts.
extension TaskCoordinator {
    /// Inline bodies up to this size stay in the task record (and so in its SQLite row); larger
    /// ones of durable sessions are spooled to a blob file, so no task document carries megabytes.
    static let largestInlineBody = 4096

    /// Every referenced body must exist now: a blob by id, a file beneath an allowed root, a
    /// finished download of the same session. Checked at creation, so a typo is a 4xx, not a
    /// failed task later.
    func checkBodySources(_ requests: [TaskCreationRequest], in session: SessionState) throws(APIError) {
        for (i, request) in requests.enumerated() {
            let prefix = requests.count > 1 ? "tasks[\(i)]." : ""
            switch request.body {
            case .blob(let id, _)?:
                let field = prefix + (request.kind == .upload ? "upload.from_blob" : "request.body.blob")
                guard let blob = try? blobs?.lookup(id), blob.owner == nil else {
                    throw APIError(422, "blob_not_found", "blob \(id) does not exist", field: field)
                }
            case .file(let path)?:
                let field = prefix + "upload.from_file"
                let fd = try openSourceFile(path, field: field)
                close(fd)
            case .task(let id)?:
                let field = prefix + "upload.from_task"
                guard let source = try? record(session, id) else {
                    throw APIError(422, "task_not_found", "task \(id) does not exist in this session", field: field)
                }
                guard source.kind == .download, source.result != nil else {
                    throw APIError(422, "file_not_available", "task \(id) is not a finished download", field: field)
                }
            case .inline?, nil:
                break
            }
        }
    }

    /// Opens a `from_file` path beneath its allowed root; 403 outside one, 422 when it is not an
    /// existing regular file.
    func openSourceFile(_ path: String, field: String) throws(APIError) -> Int32 {
        let fd: Int32
        do {
            fd = try allowedRoots.openFile(path, flags: O_RDONLY)
        } catch .notAllowed {
            throw APIError(403, "path_not_allowed", "\(path) is not inside an --allow-path root", field: field)
        } catch .missing {
            throw APIError(422, "file_does_not_exist", "\(path) does not exist", field: field)
        } catch {
            throw APIError(422, "cannot_open_file", "\(path) cannot be opened", field: field)
        }
        // fstat on the open descriptor: what is checked is what will be read.
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw APIError(422, "cannot_open_file", "\(path) is not a regular file", field: field)
        }
        return fd
    }

    /// Writes the large inline bodies of durable sessions' new tasks to blob files (blocking: call
    /// off the event loops); the records then refer to their own blobs, committed with them.
    func spoolLargeBodies(_ records: inout [TaskRecord], session: SessionState) throws(TaskFileError) -> [Blob] {
        guard session.mode.isDurable, let blobs else { return [] }
        var spooled: [Blob] = []
        for i in records.indices {
            guard case .inline(let bytes)? = records[i].body, bytes.count > TaskCoordinator.largestInlineBody else { continue }
            let blob = try blobs.writeFile(bytes, owner: "\(session.identifier)/\(records[i].id)")
            records[i].body = .blob(id: blob.id, owned: true)
            spooled.append(blob)
        }
        return spooled
    }

    /// The request body of a starting transfer: files opened now, wrapped in multipart if asked
    /// (then with the `Content-Type` naming its boundary).
    func openBody(for record: TaskRecord, session: SessionState) throws(TaskError) -> (RequestBodySource, contentType: String?) {
        guard let body = record.body else { return (.none, nil) }
        let content: BodySegment
        var filename: String?
        switch body {
        case .inline(let bytes):
            guard record.multipart != nil else { return (.bytes(bytes), nil) }
            content = .bytes(bytes)
        case .blob(let id, _):
            guard let blobs else { throw TaskError(code: .fileDoesNotExist, message: "blob \(id) is gone") }
            content = try openWhole(blobs.path(id), what: "blob \(id)")
        case .file(let path):
            do {
                let fd = try openSourceFile(path, field: "upload.from_file")
                content = .file(fd: fd, offset: 0, length: TaskCoordinator.size(of: fd))
            } catch {
                throw TaskError(code: error.code == "file_does_not_exist" ? .fileDoesNotExist : .cannotOpenFile,
                                message: error.detail)
            }
            filename = path.split(separator: "/").last.map(String.init)
        case .task(let id):
            guard let source = try? self.record(session, id), let result = source.result else {
                throw TaskError(code: .fileDoesNotExist, message: "the download of task \(id) is gone")
            }
            if source.destination != nil {
                guard let fd = try? allowedRoots.openFile(result.location, flags: O_RDONLY) else {
                    throw TaskError(code: .fileDoesNotExist, message: "\(result.location) is gone")
                }
                content = .file(fd: fd, offset: 0, length: TaskCoordinator.size(of: fd))
            } else {
                content = try openWhole(result.location, what: "the download of task \(id)")
            }
            filename = source.response?.suggestedFilename
        }
        guard let multipart = record.multipart else { return (.segments([content]), nil) }
        let wrapper = MultipartBody(spec: multipart, defaultFilename: filename ?? "file")
        return (.segments(wrapper.wrap(content)), wrapper.contentType)
    }

    private func openWhole(_ path: String, what: String) throws(TaskError) -> BodySegment {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw TaskError(code: .fileDoesNotExist, message: "\(what) is gone") }
        return .file(fd: fd, offset: 0, length: TaskCoordinator.size(of: fd))
    }

    static func size(of fd: Int32) -> Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }
}

extension TaskError: Error {}
