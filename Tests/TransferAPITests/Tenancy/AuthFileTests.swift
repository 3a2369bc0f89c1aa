import Digests
import Glibc
import Testing
import TransferCore
@testable import TransferAPI

/// The auth file: what it accepts, and a clear complaint (naming the field) for everything else.
struct AuthFileTests {
    static let hash = String(repeating: "ab", count: 32)

    /// A directory with `billing/` and `media/` inside, as the service's one root.
    static func roots() throws -> (AllowedRoots, String) {
        var template = Array("/tmp/transferd-authfile-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let root = String(cString: made!)
        mkdir(root + "/billing", 0o755)
        mkdir(root + "/media", 0o755)
        return (try AllowedRoots(paths: [root]), root)
    }

    static func parse(_ text: String, roots: AllowedRoots) throws(AuthFile.Invalid) -> AuthFile {
        try AuthFile.parse(Array(text.utf8), roots: roots)
    }

    @Test func readsEveryField() throws {
        let (roots, root) = try Self.roots()
        let file = try Self.parse("""
        {"principals": [
          {"name": "billing", "token_sha256": "\(Self.hash.uppercased())", "role": "write",
           "namespaces": ["com.example.billing."], "allow_paths": ["\(root)/billing"],
           "limits": {"requests_per_second": 2.5, "max_unfinished_tasks": 10, "max_bytes_per_second": 50000}},
          {"name": "ops", "token_sha256": "\(String(repeating: "cd", count: 32))", "role": "admin"}]}
        """, roots: roots)
        #expect(file.entries.count == 2)
        let billing = file.entries[0]
        #expect(billing.tokenSHA256 == [UInt8](repeating: 0xAB, count: 32), "hex in either case")
        #expect(billing.role == .write)
        #expect(billing.namespaces == ["com.example.billing."])
        #expect(billing.allowPaths == ["\(root)/billing"])
        #expect(billing.limits == PrincipalLimits(requestsPerSecond: 2.5, burst: 3, maxUnfinishedTasks: 10, maxBytesPerSecond: 50000),
                "burst defaults to the rate, rounded up")
        #expect(file.entries[1].namespaces == nil)
        #expect(file.entries[1].roots == nil, "no allow_paths: the service's roots")
    }

    @Test(arguments: [
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x."], "colour": 1}]}"#, "principals[0].colour"),
        (#"{"principals": [{"name": "a b", "token_sha256": "HASH", "role": "write", "namespaces": ["x."]}]}"#, "principals[0].name"),
        (#"{"principals": [{"name": "token-2", "token_sha256": "HASH", "role": "admin"}]}"#, "reserved"),
        (#"{"principals": [{"name": "anonymous", "token_sha256": "HASH", "role": "admin"}]}"#, "reserved"),
        (#"{"principals": [{"name": "a", "token_sha256": "abc", "role": "write", "namespaces": ["x."]}]}"#, "principals[0].token_sha256"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "owner", "namespaces": ["x."]}]}"#, "principals[0].role"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write"}]}"#, "principals[0].namespaces"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "read", "namespaces": []}]}"#, "principals[0].namespaces"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "admin", "namespaces": ["x."]}]}"#, "principals[0].namespaces"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x/"]}]}"#, "principals[0].namespaces[0]"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x."], "allow_paths": ["/etc"]}]}"#, "principals[0].allow_paths"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x."], "allow_paths": ["rel"]}]}"#, "principals[0].allow_paths[0]"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x."], "limits": {"burst": 5}}]}"#, "principals[0].limits.burst"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x."], "limits": {"max_bytes_per_second": 10}}]}"#, "principals[0].limits.max_bytes_per_second"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x."]}, {"name": "a", "token_sha256": "OTHER", "role": "write", "namespaces": ["y."]}]}"#, "principals[1].name"),
        (#"{"principals": [{"name": "a", "token_sha256": "HASH", "role": "write", "namespaces": ["x."]}, {"name": "b", "token_sha256": "HASH", "role": "write", "namespaces": ["y."]}]}"#, "principals[1].token_sha256"),
        (#"{"users": []}"#, "principals"),
        (#"{"principals": "#, "not valid JSON"),
    ])
    func refusesWithTheFieldAtFault(text: String, mentioned: String) throws {
        let (roots, _) = try Self.roots()
        let filled = text.replacing("OTHER", with: String(repeating: "ee", count: 32))
            .replacing("HASH", with: Self.hash)
        do {
            _ = try Self.parse(filled, roots: roots)
            Issue.record("accepted: \(filled)")
        } catch {
            #expect(error.description.contains(mentioned), "\(error.description)")
        }
    }

    @Test func anAllowPathBeneathASymlinkOutOfTheRootIsRefused() throws {
        let (roots, root) = try Self.roots()
        symlink("/etc", root + "/escape")
        #expect(throws: AuthFile.Invalid.self) {
            try Self.parse(#"{"principals": [{"name": "a", "token_sha256": "\#(Self.hash)", "role": "write", "namespaces": ["x."], "allow_paths": ["\#(root)/escape/ssl"]}]}"#,
                           roots: roots)
        }
    }

    @Test func aFileThatCannotBeReadNamesItself() throws {
        let (roots, _) = try Self.roots()
        #expect { try AuthFile.load(path: "/nonexistent/auth.json", roots: roots) } throws: { error in
            (error as? AuthFile.Invalid)?.description.hasPrefix("/nonexistent/auth.json") == true
        }
    }
}
