import Digests
import Lifecycles
import Glibc
import TransferEngine
import TransferVocabulary

/// Opens a task's files when the engine admits its transfer (on the engine's preparation queue,
/// off the curl loops): the request body, and the output file, continued from what it holds when
/// the task may resume. Until then a queued task holds no descriptor, however many wait behind the
/// session's limits. Only `openat`, `fstat` and `ftruncate` happen here, never an fsync or a store
/// read: the transfer holds a running slot meanwhile.
final class TaskFilePreparer: TransferPreparer, Sendable {
    private let taskFiles: TaskFiles
    private let session: SessionState
    private let entry: TaskEntry
    private let body: TaskBody
    /// A resumable upload's append sends the body from here on (what the origin holds is skipped).
    private let bodyFrom: Int64

    init(files: TaskFiles, session: SessionState, entry: TaskEntry, body: TaskBody, bodyFrom: Int64 = 0) {
        self.taskFiles = files
        self.session = session
        self.entry = entry
        self.body = body
        self.bodyFrom = bodyFrom
    }

    /// A failure carries the error code the task completes with: `file_does_not_exist` for a
    /// missing source or directory, `cannot_open_file` or `cannot_write_to_file` otherwise.
    func prepare() throws(TransferFailure) -> TransferFiles {
        // Read now rather than kept from the hand-over: a queued task costs no copy of its record,
        // and what is read here (where the file is, its validator) does not change while it waits.
        let record = session.locked { entry.record }
        var files = TransferFiles()
        do {
            files.body = try taskFiles.openBody(body).dropping(first: bodyFrom)
        } catch {
            throw TransferFailure(error.code, error.message)
        }
        // The one read of the body before it is sent: a header must precede it. This holds the
        // transfer's slot for as long as reading the file takes, which only tasks asking for it pay.
        if let send = record.sendDigest {
            guard let hex = BodyDigest.hex(of: files.body, algorithm: send.algorithm) else {
                TaskFiles.closeFiles(of: files.body)
                throw TransferFailure(.cannotOpenFile, "cannot read the file to send to compute its \(send.rawValue) digest")
            }
            files.headers.append(send.header(hex: hex))
        }
        let output: TaskOutput?
        do {
            output = try taskFiles.openOutput(for: record, session: session)
        } catch {
            TaskFiles.closeFiles(of: files.body)
            throw TransferFailure(error.code == ENOENT ? .fileDoesNotExist : .cannotWriteToFile, error.message)
        }
        if let output, output.isNew {
            files.output = .file(fd: output.fd, offset: 0)
        } else if let output {
            let existing = output.existingSize
            if existing > 0, record.isResumable, let validator = record.validator {
                files.resume = ResumeRequest(offset: existing, validator: validator)
                files.output = .file(fd: output.fd, offset: existing)
                // Hash only what the checkpoint does not cover, when the file still holds what
                // it covered.
                if let checkpoint = record.digestCheckpoint, checkpoint.offset <= existing, checkpoint.matches(fd: output.fd) {
                    files.digestCheckpoint = checkpoint
                }
            } else {
                output.truncate()
                files.output = .file(fd: output.fd, offset: 0)
            }
        } else {
            // An ephemeral session's data task: the body stays in memory.
            files.output = .memory
        }
        // The attempt's end takes the file from here and settles it (`transferEnded`): the outcome
        // is delivered after this returns, so it finds the file.
        session.locked { entry.output = output }
        return files
    }
}
