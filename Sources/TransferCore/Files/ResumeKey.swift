import Glibc

/// The key resume data is signed with: 32 random bytes in `resume-key` in the data directory,
/// made at first start (mode 0600), so tokens stay valid across restarts.
package enum ResumeKey {
    package static func load(directory: String) throws(TaskFileError) -> [UInt8] {
        let path = directory + "/resume-key"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            var key = [UInt8](repeating: 0, count: 32)
            guard read(fd, &key, 32) == 32 else { throw TaskFileError(code: EIO, what: "\(path) is damaged") }
            return key
        }
        var generator = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let temporary = path + ".part"
        let out = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw TaskFileError(code: errno, what: "cannot create \(path)") }
        let written = key.withUnsafeBytes { write(out, $0.baseAddress, 32) }
        let synced = fsync(out) == 0
        close(out)
        guard written == 32, synced, rename(temporary, path) == 0 else { throw TaskFileError(code: errno, what: "cannot write \(path)") }
        return key
    }
}
