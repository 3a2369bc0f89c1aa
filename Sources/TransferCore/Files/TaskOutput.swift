import Glibc

/// A directory (open) and the names a task's output takes in it.
struct OutputLocation {
    let directoryFD: Int32
    let directoryPath: String
    let finalName: String
    let temporaryName: String
}

/// The file a running task writes: a temporary file beside its final name, so the final name only
/// ever holds a complete, verified file (write → fsync → rename → fsync the directory, so a
/// crash leaves either the old name or the whole new file).
final class TaskOutput: @unchecked Sendable {
    let directoryFD: Int32
    let directoryPath: String
    let finalName: String
    let temporaryName: String
    private(set) var fd: Int32

    /// Opens (creating, or for a resumed transfer reopening) the temporary file; this object then
    /// owns the location's directory descriptor.
    package init(_ location: OutputLocation) throws(TaskFileError) {
        directoryFD = location.directoryFD
        directoryPath = location.directoryPath
        finalName = location.finalName
        temporaryName = location.temporaryName
        // Read-write: the engine's hasher reads the file back as it is written.
        fd = openat(directoryFD, temporaryName, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            let code = errno
            close(directoryFD)
            throw TaskFileError(code: code, what: "cannot create \(directoryPath)/\(temporaryName)")
        }
    }

    var finalPath: String { directoryPath == "/" ? "/" + finalName : directoryPath + "/" + finalName }

    /// Bytes already in the temporary file (what a resumed transfer continues from).
    var existingSize: Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    func truncate() { _ = ftruncate(fd, 0) }

    /// Makes the file durable under its final name: fsync, rename, fsync the directory.
    func commit() throws(TaskFileError) {
        guard fsync(fd) == 0 else { throw TaskFileError(code: errno, what: "cannot fsync \(temporaryName)") }
        closeFile()
        guard renameat(directoryFD, temporaryName, directoryFD, finalName) == 0 else {
            throw TaskFileError(code: errno, what: "cannot rename into \(finalPath)")
        }
        guard fsync(directoryFD) == 0 else { throw TaskFileError(code: errno, what: "cannot fsync \(directoryPath)") }
        close(directoryFD)
    }

    /// Drops the temporary file (failure, cancellation).
    func discard() {
        closeFile()
        unlinkat(directoryFD, temporaryName, 0)
        close(directoryFD)
    }

    /// Keeps the temporary file for a later attempt (suspend, shutdown, retry).
    func keep() {
        closeFile()
        close(directoryFD)
    }

    /// Keeps the file for resume data under `name` (beside the temporary one), returning its path.
    /// Its own name marks it as held for a token, not as a temporary file of a running task.
    func keepForResume(as name: String) -> String? {
        closeFile()
        defer { close(directoryFD) }
        guard renameat(directoryFD, temporaryName, directoryFD, name) == 0 else { return nil }
        return directoryPath == "/" ? "/" + name : directoryPath + "/" + name
    }

    private func closeFile() {
        if fd >= 0 { close(fd) }
        fd = -1
    }
}

package struct TaskFileError: Error, Sendable {
    let code: Int32
    let what: String

    var message: String { "\(what): \(String(cString: strerror(code)))" }

    /// Out of space or quota, or over the file size limit: the disk, not the input, is at fault.
    var isDiskFull: Bool { code == ENOSPC || code == EDQUOT || code == EFBIG }
}
