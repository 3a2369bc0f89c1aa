import Dispatch
import Glibc
import Logging
import TransferEngine
import TransferModel

/// A task's files: where its output goes, its partial file kept for resume data or discarded, a
/// finished file named (and made durable), request bodies found and opened, and the files that
/// belong to nothing swept. Blocking file work runs on `fileWork`, never on an event loop.
struct TaskFiles: Sendable {
    let layout: DataLayout
    let allowedRoots: AllowedRoots
    let blobs: BlobStore?
    /// Signs resume data (see `ResumeData`).
    let resumeKey: [UInt8]
    /// Largest response body a data task may keep (an error body kept in memory too).
    let maxBodyBytes: Int64
    /// Blocking file work (fsync, rename, hashing) happens here, never on an event loop.
    let fileWork: DispatchQueue
    /// Finished files of durable sessions, made durable a group at a time.
    let outputCommitter = OutputCommitter()
    /// Where a body's source task and the owners of stored files are looked up.
    let journal: TaskJournal
    let logger: Logger

    /// Where a task's output goes: beside `download.destination` (inside an allowed root), or in
    /// the session's directory. nil for ephemeral data tasks, whose body stays in memory.
    func outputLocation(for record: TaskRecord, session: SessionState) throws(TaskFileError) -> OutputLocation? {
        switch record.kind {
        case .download:
            if let destination = record.destination {
                let parent: (dirfd: Int32, name: String)
                do {
                    parent = try allowedRoots.openParent(of: destination)
                } catch {
                    throw TaskFileError(code: error == .missing ? ENOENT : EACCES, what: "cannot open the directory of \(destination)")
                }
                let directory = AllowedRoots.directory(of: AllowedRoots.normalize(destination))
                return OutputLocation(directoryFD: parent.dirfd, directoryPath: directory, finalName: parent.name,
                                      temporaryName: TaskFiles.temporaryName(for: record))
            }
            let dir = layout.filesDirectory(session.identifier)
            return OutputLocation(directoryFD: try layout.openDirectory(dir), directoryPath: dir, finalName: record.id,
                                  temporaryName: "." + record.id + ".part")
        case .data, .upload:
            guard session.mode.isDurable else { return nil }
            let dir = layout.bodiesDirectory(session.identifier)
            return OutputLocation(directoryFD: try layout.openDirectory(dir), directoryPath: dir, finalName: record.id,
                                  temporaryName: "." + record.id + ".part")
        }
    }

    /// A task made from resume data takes the partial file over, moving it to its own temporary
    /// name. When that cannot be done (the file is gone, or on another file system) the download
    /// starts from zero: resume data is a hint, never a reason to fail.
    func adoptPartial(_ resume: ResumeData, for record: TaskRecord, session: SessionState) {
        if let location = try? outputLocation(for: record, session: session) {
            if renameat(AT_FDCWD, resume.partial, location.directoryFD, location.temporaryName) != 0 {
                logger.info("resume data's partial file not taken over; starting from zero",
                            metadata: ["task": .string("\(session.identifier)/\(record.id)"), "partial": .string(resume.partial)])
            }
            close(location.directoryFD)
        }
        session.locked { session.tasks[record.id]?.record.resumeFrom = nil }
    }

    /// Opens (or reopens, to continue it) the temporary file a task writes. A file kept by name
    /// can exist only once an attempt ran or resume data handed one over; a first attempt does not
    /// look for one.
    func openOutput(for record: TaskRecord, session: SessionState) throws(TaskFileError) -> TaskOutput? {
        let reopen = record.metrics.attempts > 0 || (record.isResumable && record.validator != nil)
        return try outputLocation(for: record, session: session).map { location throws(TaskFileError) in
            try TaskOutput(location, reopen: reopen)
        }
    }

    /// A task that will not run again: resume data for its partial file when it can be resumed
    /// (the file is kept), otherwise the file is removed.
    func settlePartialOutput(of record: TaskRecord, session: SessionState) -> String? {
        guard record.isResumable, record.validator != nil, let output = try? openOutput(for: record, session: session) else {
            discardPartialOutput(of: record, session: session)
            return nil
        }
        if let token = keepForResume(record, output: output) { return token }
        output.discard()
        return nil
    }

    /// Removes a partial file left by an earlier attempt (the task will not continue it).
    func discardPartialOutput(of record: TaskRecord, session: SessionState) {
        guard let location = try? outputLocation(for: record, session: session) else { return }
        unlinkat(location.directoryFD, location.temporaryName, 0)
        unlinkat(location.directoryFD, TaskFiles.resumeName(for: record), 0)
        close(location.directoryFD)
    }

    /// The name a partial file kept for resume data takes: the temporary name with `.resume` for
    /// `.part`.
    static func resumeName(for record: TaskRecord) -> String {
        let temporary = record.destination == nil ? "." + record.id + ".part" : temporaryName(for: record)
        return String(temporary.dropLast(5)) + ".resume"
    }

    /// A temporary name beside a client's destination: hidden, marked as ours, unique per task,
    /// and short enough for any file system (255 bytes).
    static func temporaryName(for record: TaskRecord) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (record.session + "/" + record.id).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return ".transferd-" + String(hash, radix: 16) + ".part"
    }

    /// Closes what `openBody` opened, for a transfer that will not start after all.
    static func closeFiles(of body: RequestBodySource) {
        guard case .segments(let segments) = body else { return }
        for case .file(let fd, _, _) in segments { close(fd) }
    }

    /// Keeps a download's partial file and returns resume data for it, when there is something to
    /// resume: bytes on disk and a validator to send with `If-Range`.
    func keepForResume(_ record: TaskRecord, output: TaskOutput?) -> String? {
        guard record.isResumable, let output, let validator = record.validator else { return nil }
        let offset = output.existingSize
        guard offset > 0, let partial = output.keepForResume(as: TaskFiles.resumeName(for: record)) else { return nil }
        let data = ResumeData(url: record.currentURL ?? record.url, validator: validator, offset: offset,
                              partial: partial, destination: record.destination, origin: "\(record.session)/\(record.id)")
        return data.token(key: resumeKey)
    }

    /// Gives a finished file its final name. A durable session's file is made durable first (with
    /// the other files finishing meanwhile: `OutputCommitter`); an ephemeral session's is only
    /// named, as `curl -o` leaves a file: nothing of such a session is meant to survive a crash.
    func commitOutput(_ output: TaskOutput, durable: Bool, then done: @escaping @Sendable (TaskFileError?) -> Void) {
        if durable { return outputCommitter.commit(output, then: done) }
        do {
            try output.publish()
            output.closeDirectory()
            done(nil)
        } catch {
            done(error)
        }
    }

    /// A completed or deleted task's own spooled body goes with it: its row (in the caller's
    /// transaction) now, its file once that committed.
    static func ownedBlob(of record: TaskRecord) -> String? {
        if case .blob(let id, true)? = record.body { return id }
        return nil
    }

    func removeOwnedBlobFile(of record: TaskRecord) {
        guard let id = TaskFiles.ownedBlob(of: record), let blobs else { return }
        unlink(blobs.path(id))
    }
}
