import Digests
import Glibc
import JSON
import TransferCore
import TransferModel

/// The auth file (`--auth-file`): the principals that may call the API, each named by the
/// SHA-256 of its bearer token — the file never holds a token. Read at start and again on SIGHUP;
/// every fault is reported with the field it is in, and nothing of a faulty file is used.
package struct AuthFile: Sendable {
    /// One principal as the file describes it.
    package struct Entry: Sendable {
        package let tokenSHA256: [UInt8]
        package let name: String
        package let role: Principal.Role
        package let namespaces: [String]?
        package let allowPaths: [String]?
        /// The `allow_paths`, opened beneath the service's roots; nil: the service's roots.
        let roots: AllowedRoots?
        package let limits: PrincipalLimits
    }

    package struct Invalid: Error, CustomStringConvertible {
        package let description: String
    }

    package let entries: [Entry]

    /// Reads and checks the file. `roots` are the service's `--allow-path` roots, which every
    /// principal's `allow_paths` must lie within.
    package static func load(path: String, roots: AllowedRoots) throws(Invalid) -> AuthFile {
        let bytes = try read(path)
        do {
            return try parse(bytes, roots: roots)
        } catch {
            throw Invalid(description: "\(path): \(error.description)")
        }
    }

    package static func parse(_ bytes: [UInt8], roots: AllowedRoots) throws(Invalid) -> AuthFile {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw Invalid(description: "not valid JSON: \(error.message) at byte \(error.offset)")
        }
        do throws(Refusal) {
            var root = try ObjectReader(document, path: "")
            guard let items = try root.array("principals", maxCount: 100_000) else {
                throw Refusal.invalid("principals", "is required: a list of principals")
            }
            try root.finish()
            var entries: [Entry] = []
            var names = Set<String>(), hashes = Set<[UInt8]>()
            for (i, item) in items.enumerated() {
                let entry = try parseEntry(item, path: "principals[\(i)]", roots: roots)
                guard names.insert(entry.name).inserted else {
                    throw Refusal.invalid("principals[\(i)].name", "\(entry.name) is used by another principal")
                }
                guard hashes.insert(entry.tokenSHA256).inserted else {
                    throw Refusal.invalid("principals[\(i)].token_sha256", "is the token of another principal")
                }
                entries.append(entry)
            }
            return AuthFile(entries: entries)
        } catch {
            throw Invalid(description: error.detail)
        }
    }

    private static func parseEntry(_ value: JSONValue, path: String, roots: AllowedRoots) throws(Refusal) -> Entry {
        var r = try ObjectReader(value, path: path)
        let name = try r.requiredString("name", maxLength: 64)
        guard !name.isEmpty, name.utf8.allSatisfy(isNameByte) else {
            throw Refusal.invalid(r.field("name"), "must be 1–64 characters of A-Z a-z 0-9 . _ -")
        }
        guard !isReserved(name) else {
            throw Refusal.invalid(r.field("name"), "\(name) is reserved (anonymous and token-N name the built-in admins)")
        }
        let hex = try r.requiredString("token_sha256", maxLength: 64)
        guard let hash = Hex.decode(hex), hash.count == 32 else {
            throw Refusal.invalid(r.field("token_sha256"), "must be the 64 hex digits of the SHA-256 of the token")
        }
        let roleText = try r.requiredString("role")
        guard let role = Principal.Role(rawValue: roleText) else {
            throw Refusal.invalid(r.field("role"), "must be read, write or admin")
        }
        let namespaces = try r.array("namespaces", maxCount: 1000).map { items throws(Refusal) in
            try strings(items, field: r.field("namespaces")) { prefix, field throws(Refusal) in
                guard !prefix.isEmpty, prefix.utf8.count <= 200, prefix.utf8.allSatisfy(isNameByte) else {
                    throw Refusal.invalid(field, "must be 1–200 characters of A-Z a-z 0-9 . _ - (the start of session identifiers)")
                }
            }
        }
        switch (role, namespaces) {
        case (.admin, .some): throw Refusal.invalid(r.field("namespaces"), "is not for an admin, who sees every namespace")
        case (.read, nil), (.write, nil), (.read, []?), (.write, []?):
            throw Refusal.invalid(r.field("namespaces"), "is required: the session identifier prefixes a \(role.rawValue) principal may use")
        default: break
        }
        let allowPaths = try r.array("allow_paths", maxCount: 100).map { items throws(Refusal) in
            try strings(items, field: r.field("allow_paths")) { path, field throws(Refusal) in
                guard path.hasPrefix("/") else { throw Refusal.invalid(field, "must be an absolute path") }
            }
        }
        var narrowed: AllowedRoots?
        if let allowPaths {
            do {
                narrowed = try roots.narrowed(to: allowPaths)
            } catch {
                throw Refusal.invalid(r.field("allow_paths"), error.description)
            }
        }
        let limits = try r.object("limits").map { reader throws(Refusal) in try parseLimits(reader) } ?? PrincipalLimits()
        try r.finish()
        return Entry(tokenSHA256: hash, name: name, role: role, namespaces: namespaces, allowPaths: allowPaths,
                     roots: narrowed, limits: limits)
    }

    private static func parseLimits(_ reader: ObjectReader) throws(Refusal) -> PrincipalLimits {
        var r = reader
        var limits = PrincipalLimits()
        limits.requestsPerSecond = try r.number("requests_per_second", in: 0.001...1_000_000)
        limits.burst = try r.integer("burst", in: 1...10_000_000).map(Int.init)
        if limits.burst != nil && limits.requestsPerSecond == nil {
            throw Refusal.invalid(r.field("burst"), "needs requests_per_second")
        }
        if let rate = limits.requestsPerSecond, limits.burst == nil { limits.burst = max(1, Int(rate.rounded(.up))) }
        limits.maxUnfinishedTasks = try r.integer("max_unfinished_tasks", in: 0...100_000_000).map(Int.init)
        limits.maxBytesPerSecond = try r.integer("max_bytes_per_second", in: 1024...(1 << 50))
        try r.finish()
        return limits
    }

    private static func strings(_ items: [JSONValue], field: String,
                                check: (String, String) throws(Refusal) -> Void) throws(Refusal) -> [String]
    {
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else { throw Refusal.invalid("\(field)[\(i)]", "must be a string") }
            try check(s, "\(field)[\(i)]")
            out.append(s)
        }
        return out
    }

    /// The names of the admins that are not in the file: `--api-token` holders and the anonymous caller.
    private static func isReserved(_ name: String) -> Bool {
        name == "anonymous" || (name.hasPrefix("token-") && !name.dropFirst(6).isEmpty && name.dropFirst(6).allSatisfy({ $0.isASCII && $0.isNumber }))
    }

    private static func isNameByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
    }

    /// The whole file, up to 64 MiB (100,000 principals take some 20 MB).
    private static func read(_ path: String) throws(Invalid) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Invalid(description: "\(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw Invalid(description: "\(path): \(String(cString: strerror(errno)))") }
            if n == 0 { return bytes }
            bytes += buffer[0..<n]
            guard bytes.count <= 64 << 20 else { throw Invalid(description: "\(path): larger than 64 MiB") }
        }
    }
}
