import Glibc
import Testing
@testable import JSON
@testable import TransferCore
@testable import TransferModel

/// A root with a file, a subdirectory, a symlink inside and a symlink out.
func makeRoot() -> String {
    var template = Array("/tmp/transferd-roots-XXXXXX".utf8CString)
    let base = String(cString: mkdtemp(&template)!)
    mkdir(base + "/root", 0o755)
    mkdir(base + "/root/sub", 0o755)
    mkdir(base + "/outside", 0o755)
    close(open(base + "/root/sub/file", O_CREAT | O_WRONLY, 0o644))
    close(open(base + "/outside/secret", O_CREAT | O_WRONLY, 0o644))
    symlink(base + "/outside", base + "/root/escape")
    symlink("sub", base + "/root/inside")
    return base
}

struct AllowedRootsTests {
    @Test func opensPathsInsideTheRoot() throws {
        let base = makeRoot()
        let roots = try AllowedRoots(paths: [base + "/root"])
        let parent = try roots.openParent(of: base + "/root/sub/new.bin")
        #expect(parent.name == "new.bin")
        close(parent.dirfd)
        let file = try roots.openFile(base + "/root/sub/file", flags: O_RDONLY)
        close(file)
        // A symlink that stays inside the root may be used as a directory.
        let viaLink = try roots.openParent(of: base + "/root/inside/x")
        close(viaLink.dirfd)
    }

    @Test func refusesEscapes() throws {
        let base = makeRoot()
        let roots = try AllowedRoots(paths: [base + "/root"])
        let escapes = [
            base + "/outside/x",                 // another directory
            base + "/root/../outside/x",         // .. lexically
            base + "/root/escape/x",             // a symlinked directory leading out
            "/etc/passwd",                        // far away
            "relative/path",                      // not absolute
            base + "/root",                       // the root itself is not a file name
        ]
        for path in escapes {
            #expect(throws: AllowedRoots.Failure.notAllowed, "\(path)") { _ = try roots.openParent(of: path) }
        }
        #expect(throws: AllowedRoots.Failure.notAllowed) { _ = try roots.openFile(base + "/root/escape/secret", flags: O_RDONLY) }
    }

    @Test func aMissingDirectoryIsReported() throws {
        let base = makeRoot()
        let roots = try AllowedRoots(paths: [base + "/root"])
        #expect(throws: AllowedRoots.Failure.missing) { _ = try roots.openParent(of: base + "/root/nope/x") }
    }

    @Test func noRootsAllowNothing() throws {
        let roots = try AllowedRoots(paths: [])
        #expect(throws: AllowedRoots.Failure.notAllowed) { _ = try roots.openParent(of: "/tmp/x") }
    }

    @Test func aMissingRootIsAConfigurationError() {
        #expect(throws: AllowedRoots.UnusableRoot.self) { _ = try AllowedRoots(paths: ["/no/such/root/here"]) }
    }

    /// The scan that returns a normalized path as it is agrees with the full normalization.
    @Test func normalizesAsTheFullSplitWould() {
        let reference = { (path: String) in "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/") }
        for path in ["/", "/a", "/a/b.bin", "//a", "/a//b", "/a/./b", "/./a", "/a/.", "/a/", "/a/b/", "/.a/b.", "/a/../b",
                     "/..", "/a/..b", "/a/.../b", "///", "/./", "/a/b/./"] {
            #expect(AllowedRoots.normalize(path) == reference(path), "\(path)")
        }
        #expect(AllowedRoots.isNormalized("/a/b"))
        #expect(!AllowedRoots.isNormalized("/a/./b"))
        #expect(!AllowedRoots.isNormalized("a/b"))
        #expect(AllowedRoots.directory(of: "/a/b/c.bin") == "/a/b")
        #expect(AllowedRoots.directory(of: "/c.bin") == "/")
        #expect(AllowedRoots.hasParentComponent("/a/../b"))
        #expect(AllowedRoots.hasParentComponent("/a/.."))
        #expect(!AllowedRoots.hasParentComponent("/a/..b/c"))
    }
}
