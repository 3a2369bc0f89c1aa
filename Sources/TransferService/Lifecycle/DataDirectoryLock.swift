import Reactor
import Glibc

/// An exclusive lock on the data directory, held for the life of the process: two transferd
/// processes on one data directory (a second container on the same volume, a scaled-up compose
/// service) would both run the same stored tasks and write the same files. `flock` locks belong to
/// the open file, so the kernel releases this one however the process ends, `kill -9` included,
/// and a restart never finds a stale lock.
final class DataDirectoryLock: Sendable {
    /// The lock cannot be had: a condition of the machine, not a bad setting.
    struct Unavailable: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private let fd: Int32

    init(root: String) throws {
        let path = root + "/transferd.lock"
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Unavailable("cannot open \(path): \(errnoDescription())") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = DataDirectoryLock.readHolder(fd)
            close(fd)
            guard code == EWOULDBLOCK else { throw Unavailable("cannot lock \(path): \(errnoDescription(code))") }
            throw Unavailable("the data directory \(root) is in use by another transferd"
                + (holder.isEmpty ? "" : " (pid \(holder))"))
        }
        // Who holds it, for the message above and for an operator reading the file.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    private static func readHolder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return "" }
        return String(decoding: buffer[..<n], as: UTF8.self).filter(\.isNumber)
    }
}
