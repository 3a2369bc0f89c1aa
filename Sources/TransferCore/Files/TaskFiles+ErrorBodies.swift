import CLinux
import Glibc
import TransferEngine
import TransferModel

/// `configuration.fail_on_http_error`: an origin status ≥ 400 that no retry will change ends the
/// task with `http_error`. The response body stays readable at `…/body`, but a download leaves
/// nothing at its destination: the error page is not the file asked for.
extension TaskFiles {
    /// Keeps the response body of a task failing with `http_error` where `…/body` finds it, and
    /// returns the output still to be dropped (nil once the body took it over).
    func keepErrorBody(_ output: TaskOutput?, outcome: TransferOutcome, entry: TaskEntry, in session: SessionState) -> TaskOutput? {
        let record = session.locked { entry.record }
        guard let output else {
            // An ephemeral data task's body is already in memory.
            session.locked { entry.memoryBody = outcome.body ?? [] }
            return nil
        }
        guard record.kind == .download else {
            // A data or upload task's file is its body already: it takes its final name as a
            // successful one's does (not made durable: an error page is not what a 2xx promised).
            guard (try? output.publish()) != nil else { return output }
            output.closeDirectory()
            session.locked { entry.record.bodyLocation = output.finalPath }
            return nil
        }
        if session.mode.isDurable {
            if let path = copyErrorBody(of: output, record: record, session: session) {
                session.locked { entry.record.bodyLocation = path }
            }
        } else if let bytes = TaskFiles.read(output.fd, upTo: maxBodyBytes) {
            session.locked { entry.memoryBody = bytes }
        }
        return output
    }

    /// Copies a download's error body into the session's bodies directory (the destination may be
    /// on another file system, so no link will do).
    private func copyErrorBody(of output: TaskOutput, record: TaskRecord, session: SessionState) -> String? {
        let directory = layout.bodiesDirectory(session.identifier)
        guard let dirfd = try? layout.openDirectory(directory) else { return nil }
        defer { close(dirfd) }
        let fd = openat(dirfd, record.id, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var offset: Int64 = 0
        let size = output.existingSize
        while offset < size {
            var from = off_t(offset)
            let n = sendfile(fd, output.fd, &from, Int(size - offset))
            guard n > 0 else {
                unlinkat(dirfd, record.id, 0)
                return nil
            }
            offset += Int64(n)
        }
        return directory + "/" + record.id
    }

    /// A file's bytes, when it holds no more than `limit`.
    private static func read(_ fd: Int32, upTo limit: Int64) -> [UInt8]? {
        var st = stat()
        guard fstat(fd, &st) == 0, Int64(st.st_size) <= limit else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }
}
