import FuzzSupport
import TransferAPI
import TransferCore

/// The auth file (`--auth-file`), read at start and on SIGHUP. Properties: a file is accepted or
/// refused with a description, never a crash; an accepted file has unique names and token hashes
/// of 32 bytes, and reading it again gives the same principals.
@main enum FuzzAuthFile {
    /// `allow_paths` must lie inside these; /tmp exists on every machine the target runs on.
    static let roots = try! AllowedRoots(paths: ["/tmp"])

    static func main() {
        fuzzMain { input in
            let bytes = Array(input)
            guard let file = try? AuthFile.parse(bytes, roots: roots) else { return }
            fuzzCheck(Set(file.entries.map(\.name)).count == file.entries.count, "duplicate principal names accepted")
            fuzzCheck(file.entries.allSatisfy { $0.tokenSHA256.count == 32 }, "a token hash is not 32 bytes")
            let again = try? AuthFile.parse(bytes, roots: roots)
            fuzzCheck(again?.entries.map(\.name) == file.entries.map(\.name), "reading the file twice differs")
        }
    }
}
