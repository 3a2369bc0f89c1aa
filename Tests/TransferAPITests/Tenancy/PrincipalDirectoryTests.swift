import Digests
import Testing
import TransferCore
@testable import TransferAPI

/// Finding the principal of a token, and what a reload keeps.
struct PrincipalDirectoryTests {
    static let roots = try! AllowedRoots(paths: [])

    static func hex(_ token: String) -> String { SHA256Hex.of(Array(token.utf8)) }

    static func file(_ principals: String) throws -> AuthFile {
        try AuthFile.parse(Array(#"{"principals": [\#(principals)]}"#.utf8), roots: roots)
    }

    static func lookup(_ directory: PrincipalDirectory, _ token: String) -> Principal? {
        Array(token.utf8).withUnsafeBytes { directory.authenticate($0) }
    }

    @Test func tokensFindTheirPrincipalsAndApiTokensAreAdmins() throws {
        let file = try Self.file(#"""
        {"name": "billing", "token_sha256": "\#(Self.hex("b-token"))", "role": "write", "namespaces": ["com.b."]},
        {"name": "dash", "token_sha256": "\#(Self.hex("d-token"))", "role": "read", "namespaces": ["com."]}
        """#)
        let directory = PrincipalDirectory(apiTokens: ["first", "second"], authFile: file, roots: Self.roots)
        #expect(directory.requiresAuthentication)
        #expect(Self.lookup(directory, "b-token")?.name == "billing")
        #expect(Self.lookup(directory, "d-token")?.role == .read)
        #expect(Self.lookup(directory, "second")?.name == "token-2")
        #expect(Self.lookup(directory, "second")?.isAdmin == true)
        #expect(Self.lookup(directory, "b-token ") == nil)
        #expect(Self.lookup(directory, "") == nil)
    }

    @Test func withNothingConfiguredEveryoneIsTheAnonymousAdmin() {
        let directory = PrincipalDirectory(apiTokens: [], authFile: nil, roots: Self.roots)
        #expect(!directory.requiresAuthentication)
        #expect(Self.lookup(directory, "anything")?.name == "anonymous")
    }

    @Test func anEmptyAuthFileStillRequiresATokenAndAdmitsNone() throws {
        let directory = PrincipalDirectory(apiTokens: [], authFile: try Self.file(""), roots: Self.roots)
        #expect(directory.requiresAuthentication)
        #expect(Self.lookup(directory, "anything") == nil)
    }

    @Test func aReloadReplacesPrincipalsAndKeepsAnUnchangedBudget() throws {
        let limited = #""limits": {"requests_per_second": 1, "burst": 2}"#
        let directory = PrincipalDirectory(apiTokens: ["admin"], authFile: try Self.file(#"""
        {"name": "billing", "token_sha256": "\#(Self.hex("b-token"))", "role": "write", "namespaces": ["com.b."], \#(limited)},
        {"name": "gone", "token_sha256": "\#(Self.hex("g-token"))", "role": "write", "namespaces": ["com.g."]}
        """#), roots: Self.roots)
        let before = directory.generation
        let spent = try #require(Self.lookup(directory, "b-token")?.requestRate)
        _ = spent.take(); _ = spent.take()
        directory.replace(with: try Self.file(#"""
        {"name": "billing", "token_sha256": "\#(Self.hex("b-token-2"))", "role": "read", "namespaces": ["com.b."], \#(limited)}
        """#))
        #expect(directory.generation > before)
        #expect(Self.lookup(directory, "g-token") == nil, "removed")
        #expect(Self.lookup(directory, "b-token") == nil, "its old token no longer works")
        let billing = try #require(Self.lookup(directory, "b-token-2"))
        #expect(billing.role == .read)
        #expect(billing.requestRate === spent, "a reload does not hand out a fresh burst")
        #expect(billing.requestRate?.take().allowed == false)
        #expect(Self.lookup(directory, "admin")?.name == "token-1", "--api-token admins stay")
    }
}
