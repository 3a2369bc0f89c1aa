import Glibc

/// The key resume data is signed with: 32 random bytes in `resume-key` in the data directory,
/// made at first start (mode 0600), so tokens stay valid across restarts.
package enum ResumeKey {
    package static func load(directory: String) throws(TaskFileError) -> [UInt8] {
        let path = directory + "/resume-key"
        if let key = try read(path) { return key }
        var generator = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // Replicas of a cluster share the data directory and may start at once: each writes its
        // own candidate and links it into place, which fails for all but the first, and those
        // use the key that won — one key for every replica, or their resume data would not travel.
        let temporary = path + ".part.\(getpid())"
        let out = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw TaskFileError(code: errno, what: "cannot create \(path)") }
        defer { unlink(temporary) }
        let written = key.withUnsafeBytes { write(out, $0.baseAddress, 32) }
        let synced = fsync(out) == 0
        close(out)
        guard written == 32, synced else { throw TaskFileError(code: errno, what: "cannot write \(path)") }
        if link(temporary, path) == 0 { return key }
        guard errno == EEXIST, let existing = try read(path) else { throw TaskFileError(code: errno, what: "cannot write \(path)") }
        return existing
    }

    /// The key stored at `path`; nil when there is none yet.
    private static func read(_ path: String) throws(TaskFileError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var key = [UInt8](repeating: 0, count: 32)
        guard Glibc.read(fd, &key, 32) == 32 else { throw TaskFileError(code: EIO, what: "\(path) is damaged") }
        return key
    }
}
