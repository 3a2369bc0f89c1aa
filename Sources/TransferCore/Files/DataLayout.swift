import Glibc

/// Where transferd keeps things under its data directory:
///
///     transferd.sqlite              the store (with -wal and -shm)
///     sessions/<identifier>/files   downloads without a destination
///     sessions/<identifier>/bodies  response bodies of data and upload tasks (durable sessions)
///     blobs/<id>                    bytes handed over for uploads, and spooled inline bodies
///
/// Partial files kept by name live beside their final names, as `.<name>.part` (`TaskOutput`).
package struct DataLayout: Sendable {
    package let root: String

    package init(root: String) {
        self.root = root
    }

    package var databasePath: String { root + "/transferd.sqlite" }

    package var blobsDirectory: String { root + "/blobs" }

    func sessionDirectory(_ session: String) -> String { root + "/sessions/" + session }

    func filesDirectory(_ session: String) -> String { sessionDirectory(session) + "/files" }

    func bodiesDirectory(_ session: String) -> String { sessionDirectory(session) + "/bodies" }

    /// Opens a directory of the layout for `*at` calls, creating it (and its parents) if needed.
    func openDirectory(_ path: String) throws(TaskFileError) -> Int32 {
        try DataLayout.makeDirectories(path)
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw TaskFileError(code: errno, what: "cannot open \(path)") }
        return fd
    }

    package static func makeDirectories(_ path: String) throws(TaskFileError) {
        var current = ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += (current.isEmpty && !path.hasPrefix("/") ? "" : "/") + part
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw TaskFileError(code: errno, what: "cannot create \(current)")
            }
        }
    }

    /// The names in a directory (not `.` and `..`); empty when it cannot be read.
    static func entries(of path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = entryName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The name of a directory entry, read in place. Never through `entry.pointee`: that copies a
    /// whole `struct dirent` (or its 256-byte `d_name`), but readdir(3) returns records only
    /// `d_reclen` long, so the copy of the last one in its buffer can run off the mapped memory.
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        String(cString: UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \.d_name)!)
            .assumingMemoryBound(to: CChar.self))
    }

    /// Removes a directory tree (a session's files once it is gone).
    static func removeTree(_ path: String) {
        guard opendir(path).map({ closedir($0) }) != nil else { unlink(path); return }
        for name in entries(of: path) {
            let child = path + "/" + name
            var st = stat()
            if lstat(child, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
        }
        rmdir(path)
    }
}
