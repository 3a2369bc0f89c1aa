import CLinux
import Glibc
import JSON

/// The `--allow-path` roots, and safe ways to open paths beneath them (no `..`, no
/// symlink escape): each root is opened once; a path is resolved relative to its root with
/// `openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS)`, which refuses `..`, absolute symlinks and any
/// symlink that leads out of the root. Where openat2 is unavailable (old kernels, seccomp), a walk
/// with `O_NOFOLLOW` at every component refuses symlinks altogether.
/// O_PATH (glibc declares it only under _GNU_SOURCE): a descriptor that names a directory for
/// `*at` calls without opening it for reading.
let transferdOpenPath: Int32 = 0o10000000

package final class AllowedRoots: Sendable {
    struct Root: Sendable {
        let path: String
        let fd: Int32
    }

    let roots: [Root]

    /// An `--allow-path` that cannot be opened as a directory: the service does not start.
    package struct UnusableRoot: Error, CustomStringConvertible {
        package let description: String
    }

    package init(paths: [String]) throws(UnusableRoot) {
        var roots: [Root] = []
        for path in paths {
            let normalized = AllowedRoots.normalize(path)
            let fd = open(normalized, transferdOpenPath | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw UnusableRoot(description: "--allow-path \(path): \(String(cString: strerror(errno)))") }
            roots.append(Root(path: normalized, fd: fd))
        }
        self.roots = roots
    }

    private init(roots: [Root]) {
        self.roots = roots
    }

    /// Roots replaced (a reloaded auth file) give their descriptors back.
    deinit {
        for root in roots { close(root.fd) }
    }

    /// Roots inside these ones (a principal's `allow_paths`): each must be an existing directory
    /// beneath one of these roots, reached without `..` or a symlink out of it.
    package func narrowed(to paths: [String]) throws(UnusableRoot) -> AllowedRoots {
        var narrowed: [Root] = []
        for path in paths {
            let normalized = AllowedRoots.normalize(path)
            do {
                let (root, relative) = try locate(normalized)
                let fd = relative.isEmpty ? fcntl(root.fd, F_DUPFD_CLOEXEC, 0)
                    : try resolve(root, relative, flags: transferdOpenPath | O_DIRECTORY | O_CLOEXEC)
                narrowed.append(Root(path: normalized, fd: fd))
            } catch {
                for root in narrowed { close(root.fd) }
                let reason = error == .notAllowed ? "is not inside an --allow-path root"
                    : error == .missing ? "does not exist" : "cannot be opened"
                throw UnusableRoot(description: "\(path) \(reason)")
            }
        }
        return AllowedRoots(roots: narrowed)
    }

    package enum Failure: Error, Equatable {
        /// Outside every root, or escaping one.
        case notAllowed
        /// Inside a root, but a component does not exist.
        case missing
        case other(Int32)
    }

    /// Opens the directory that would hold `path` and returns it with the final name; refuses
    /// anything outside the roots.
    func openParent(of path: String) throws(Failure) -> (dirfd: Int32, name: String) {
        let place = try place(of: path)
        return (try openDirectory(of: place), place.name)
    }

    /// Where `path` would be: the root, the directory relative to it, the final name.
    struct Place {
        let root: Root
        let directory: String
        let name: String

        /// Paths with equal keys are opened alike (same root, same directory).
        var directoryKey: String { root.path + "\u{0}" + directory }
    }

    /// `path` placed beneath a root, lexically (nothing is opened): refuses anything outside the
    /// roots, `..` and a root itself.
    func place(of path: String) throws(Failure) -> Place {
        let (root, relative) = try locate(path)
        guard !relative.isEmpty else { throw .notAllowed }
        // Normalized: no empty, `.` or `..` component (`locate`).
        let slash = relative.lastIndex(of: "/")
        let name = String(slash.map { relative[relative.index(after: $0)...] } ?? relative[...])
        return Place(root: root, directory: slash.map { String(relative[..<$0]) } ?? "", name: name)
    }

    func openDirectory(of place: Place) throws(Failure) -> Int32 {
        try resolve(place.root, place.directory, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    /// Opens an existing file beneath a root.
    package func openFile(_ path: String, flags: Int32) throws(Failure) -> Int32 {
        let (root, relative) = try locate(path)
        guard !relative.isEmpty else { throw .notAllowed }
        return try resolve(root, relative, flags: flags | O_CLOEXEC | O_NOFOLLOW)
    }

    /// The root containing `path` and the path relative to it. Lexically `..` is refused outright.
    private func locate(_ path: String) throws(Failure) -> (Root, String) {
        guard path.hasPrefix("/") else { throw .notAllowed }
        let normalized = AllowedRoots.normalize(path)
        guard !AllowedRoots.hasParentComponent(normalized) else { throw .notAllowed }
        for root in roots {
            if normalized == root.path { return (root, "") }
            let prefix = root.path == "/" ? "/" : root.path + "/"
            if normalized.hasPrefix(prefix) { return (root, String(normalized.dropFirst(prefix.count))) }
        }
        throw .notAllowed
    }

    private func resolve(_ root: Root, _ relative: String, flags: Int32) throws(Failure) -> Int32 {
        let target = relative.isEmpty ? "." : relative
        let resolve = UInt64(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
        // openat2 refuses a mode without O_CREAT (EINVAL), unlike openat.
        let fd = transferd_openat2(root.fd, target, flags, flags & O_CREAT != 0 ? 0o644 : 0, resolve)
        if fd >= 0 { return fd }
        switch errno {
        case EXDEV, ELOOP: throw .notAllowed
        case ENOENT, ENOTDIR: throw .missing
        case ENOSYS, EPERM: return try walk(root, relative, flags: flags)
        default: throw .other(errno)
        }
    }

    /// The fallback: one component at a time, never following a symlink.
    private func walk(_ root: Root, _ relative: String, flags: Int32) throws(Failure) -> Int32 {
        var dir = dup(root.fd)
        let components = relative.split(separator: "/").map(String.init).filter { $0 != "." }
        for (i, component) in components.enumerated() {
            let last = i == components.count - 1
            let next = openat(dir, component, last ? flags | O_NOFOLLOW : transferdOpenPath | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0o644)
            let saved = errno
            close(dir)
            guard next >= 0 else { throw saved == ELOOP ? .notAllowed : (saved == ENOENT ? .missing : .other(saved)) }
            dir = next
        }
        if components.isEmpty {
            let fd = openat(dir, ".", flags, 0o644)
            close(dir)
            return fd
        }
        return dir
    }

    /// Collapses `//` and `/./`; keeps the path absolute; drops a trailing slash. A path already
    /// in that form (as nearly every destination is) is returned as it is, after one scan.
    package static func normalize(_ path: String) -> String {
        if isNormalized(path) { return path }
        let parts = path.split(separator: "/").filter { $0 != "." }
        return "/" + parts.joined(separator: "/")
    }

    /// The directory of a normalized path (`/` for a name in the root directory).
    static func directory(of normalized: String) -> String {
        guard let slash = normalized.lastIndex(of: "/"), slash != normalized.startIndex else { return "/" }
        return String(normalized[..<slash])
    }

    /// Absolute, with no empty or `.` component and no trailing slash.
    static func isNormalized(_ path: String) -> Bool {
        guard path.utf8.first == 0x2F else { return false }
        var length = 0
        var dot = false
        for byte in path.utf8.dropFirst() {
            if byte == 0x2F {
                if length == 0 || (length == 1 && dot) { return false }
                length = 0
            } else {
                dot = length == 0 && byte == 0x2E
                length += 1
            }
        }
        return path.utf8.count == 1 || !(length == 0 || (length == 1 && dot))
    }

    /// Whether a normalized path has a `..` component.
    static func hasParentComponent(_ normalized: String) -> Bool {
        // One pass over the bytes, nothing split off: asked twice a task (creation, start).
        var length = 0
        var dots = 0
        for byte in normalized.utf8 {
            if byte == 0x2F {
                if length == 2 && dots == 2 { return true }
                (length, dots) = (0, 0)
            } else {
                length += 1
                if byte == 0x2E { dots += 1 }
            }
        }
        return length == 2 && dots == 2
    }
}
