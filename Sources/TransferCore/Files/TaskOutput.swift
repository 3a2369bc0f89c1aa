import CLinux
import Glibc
import Reactor

/// A directory (open) and the names a task's output takes in it.
struct OutputLocation {
    let directoryFD: Int32
    let directoryPath: String
    let finalName: String
    let temporaryName: String
}

/// The file a running task writes, so that the final name only ever holds a complete, verified
/// file: the bytes are made durable first, then the file gets its final name, then the directory
/// is made durable (a crash leaves either the old name or the whole new file).
///
/// The file starts without a name (`O_TMPFILE`) and is linked into its directory only when it is
/// finished: creating a named file holds the directory's lock for the whole inode allocation,
/// and a rename into place then waits for every create in flight in that directory (with 64
/// downloads into one directory, the renames spun on that lock for a fifth of transferd's CPU).
/// A file gets its temporary name earlier only when something must find it again by name: a
/// later attempt continuing it (`keep`), resume data (`keepForResume`), or a restart after a
/// crash (`nameForRestart`: a durable session's download once it ran a second or holds a MiB,
/// `PartialWorth`). File systems without `O_TMPFILE`
/// get the named temporary file from the start.
final class TaskOutput: @unchecked Sendable {
    let directoryFD: Int32
    let directoryPath: String
    let finalName: String
    let temporaryName: String
    /// The open file, and whether it has its temporary name; the lock orders naming (on a curl
    /// loop) against the attempt's end (on the file-work queue).
    private let file: Locked<(fd: Int32, named: Bool)>
    /// Made by this open: empty, with nothing to continue or truncate. (Truncating a file on ext4
    /// also makes its close start writeback, the heuristic for files replaced by truncation.)
    let isNew: Bool

    /// Opens the task's output; this object then owns the location's directory descriptor.
    /// `reopen`: a file an earlier attempt kept under the temporary name is continued (or at
    /// least reused, so none is left behind); otherwise none can exist and no name is looked up.
    package init(_ location: OutputLocation, reopen: Bool) throws(TaskFileError) {
        directoryFD = location.directoryFD
        directoryPath = location.directoryPath
        finalName = location.finalName
        temporaryName = location.temporaryName
        // Read-write: the engine's hasher reads the file back as it is written.
        var fd: Int32 = -1
        var named = true
        var isNew = false
        if reopen {
            fd = openat(directoryFD, temporaryName, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        }
        if fd < 0 && (!reopen || errno == ENOENT) {
            fd = transferd_open_unnamed(directoryFD, O_RDWR | O_CLOEXEC, 0o644)
            if fd >= 0 {
                named = false
                isNew = true
            } else if TaskOutput.lacksTemporaryFiles(errno) {
                fd = openat(directoryFD, temporaryName, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
            }
        }
        self.isNew = isNew
        guard fd >= 0 else {
            let code = errno
            close(directoryFD)
            throw TaskFileError(code: code, what: "cannot create \(directoryPath)/\(temporaryName)")
        }
        file = Locked((fd, named))
    }

    /// The errors of a file system (or kernel) that cannot make unnamed files (open(2)).
    private static func lacksTemporaryFiles(_ code: Int32) -> Bool {
        code == EOPNOTSUPP || code == EISDIR || code == EINVAL
    }

    var fd: Int32 { file.withLock { $0.fd } }

    var finalPath: String { directoryPath == "/" ? "/" + finalName : directoryPath + "/" + finalName }

    /// Bytes already in the file (what a resumed transfer continues from).
    var existingSize: Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    func truncate() { _ = ftruncate(fd, 0) }

    /// Gives a file still being written its temporary name, so that the next start after a crash
    /// finds it and continues it. Once: a named file keeps its name.
    func nameForRestart() {
        file.withLock { file in
            guard file.fd >= 0, !file.named else { return }
            file.named = TaskOutput.link(file.fd, at: directoryFD, as: temporaryName, replacing: true) == 0
        }
    }

    /// The file system the file is on (its device number), for one `syncfs` per file system.
    var device: UInt64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? UInt64(st.st_dev) : 0
    }

    /// The file's bytes on the device.
    func syncData() throws(TaskFileError) {
        guard fsync(fd) == 0 else { throw TaskFileError(code: errno, what: "cannot fsync \(finalPath)'s temporary file") }
    }

    /// Gives the finished file its final name (replacing whatever had it) and closes it.
    func publish() throws(TaskFileError) {
        let code: Int32 = file.withLock { file in
            defer { TaskOutput.closeFile(&file) }
            if !file.named {
                let linked = TaskOutput.link(file.fd, at: directoryFD, as: finalName, replacing: false)
                guard linked == EEXIST else { return linked }
                // Something has the final name: replace it atomically, by way of the temporary name.
                let named = TaskOutput.link(file.fd, at: directoryFD, as: temporaryName, replacing: true)
                guard named == 0 else { return named }
                file.named = true
            }
            return renameat(directoryFD, temporaryName, directoryFD, finalName) == 0 ? 0 : errno
        }
        guard code == 0 else { throw TaskFileError(code: code, what: "cannot rename into \(finalPath)") }
    }

    /// The directory's entries on the device (the new name of `publish`).
    func syncDirectory() throws(TaskFileError) {
        guard fsync(directoryFD) == 0 else { throw TaskFileError(code: errno, what: "cannot fsync \(directoryPath)") }
    }

    /// Done with the directory: after `publish` (and `syncDirectory`), or instead of them.
    func closeDirectory() {
        close(directoryFD)
    }

    /// Drops the file (failure, cancellation).
    func discard() {
        file.withLock { file in
            if file.named { unlinkat(directoryFD, temporaryName, 0) }
            TaskOutput.closeFile(&file)
        }
        close(directoryFD)
    }

    /// Keeps the file for a later attempt (suspend, shutdown, retry) under its temporary name.
    /// An empty one is not worth a name: the next attempt starts from zero anyway.
    func keep() {
        file.withLock { file in
            var st = stat()
            if !file.named, fstat(file.fd, &st) == 0, st.st_size > 0 {
                _ = TaskOutput.link(file.fd, at: directoryFD, as: temporaryName, replacing: true)
            }
            TaskOutput.closeFile(&file)
        }
        close(directoryFD)
    }

    /// Keeps the file for resume data under `name` (beside the temporary one), returning its path.
    /// Its own name marks it as held for a token, not as a temporary file of a running task.
    func keepForResume(as name: String) -> String? {
        defer { close(directoryFD) }
        let kept: Bool = file.withLock { file in
            defer { TaskOutput.closeFile(&file) }
            if file.named { return renameat(directoryFD, temporaryName, directoryFD, name) == 0 }
            return TaskOutput.link(file.fd, at: directoryFD, as: name, replacing: true) == 0
        }
        guard kept else { return nil }
        return directoryPath == "/" ? "/" + name : directoryPath + "/" + name
    }

    /// Links an open file (named or not) into `directory` as `name`; 0 or the errno. Through
    /// /proc/self/fd, which needs no privilege (linkat with AT_EMPTY_PATH needs
    /// CAP_DAC_READ_SEARCH), falling back to AT_EMPTY_PATH where /proc is not mounted.
    /// `replacing`: a leftover of that name (an earlier attempt's) is removed first.
    private static func link(_ fd: Int32, at directory: Int32, as name: String, replacing: Bool) -> Int32 {
        var result = linkat(AT_FDCWD, "/proc/self/fd/\(fd)", directory, name, AT_SYMLINK_FOLLOW)
        if result != 0 && errno == ENOENT {
            result = transferd_link_descriptor(fd, directory, name)
        }
        if result != 0 && errno == EEXIST && replacing {
            unlinkat(directory, name, 0)
            return link(fd, at: directory, as: name, replacing: false)
        }
        return result == 0 ? 0 : errno
    }

    private static func closeFile(_ file: inout (fd: Int32, named: Bool)) {
        if file.fd >= 0 { close(file.fd) }
        file.fd = -1
    }
}

package struct TaskFileError: Error, Sendable {
    let code: Int32
    let what: String

    var message: String { "\(what): \(String(cString: strerror(code)))" }

    /// Out of space or quota, or over the file size limit: the disk, not the input, is at fault.
    var isDiskFull: Bool { code == ENOSPC || code == EDQUOT || code == EFBIG }
}
