import Glibc
import TransferAPI
import TransferCore
import TransferEngine

/// `transferd --check-config`: what starting would find wrong with the configuration, found
/// without starting — for a deployment to check a change before it rolls out.
extension Service {
    /// Checks the network policy, the allowed roots, the auth file and the data directory (a
    /// directory transferd can write, or one it can create). Throws the first problem.
    public static func checkConfiguration(_ configuration: ServiceConfiguration) throws(ConfigurationError) {
        guard NetworkPolicy(parsing: configuration.networkPolicy) != nil else {
            throw ConfigurationError("invalid --network-policy '\(configuration.networkPolicy)'")
        }
        let roots: AllowedRoots
        do {
            roots = try AllowedRoots(paths: configuration.allowedPaths)
        } catch {
            throw ConfigurationError(error.description)
        }
        if let path = configuration.authFile {
            do {
                _ = try AuthFile.load(path: path, roots: roots)
            } catch {
                throw ConfigurationError("--auth-file \(error.description)")
            }
        }
        try checkDataDirectory(configuration.dataDirectory.hasPrefix("/")
            ? configuration.dataDirectory : currentDirectory() + "/" + configuration.dataDirectory)
    }

    /// The directory exists and is writable, or its nearest existing ancestor is a writable
    /// directory (transferd creates the rest at start).
    private static func checkDataDirectory(_ path: String) throws(ConfigurationError) {
        var candidate = path
        while true {
            var st = stat()
            if stat(candidate, &st) == 0 {
                guard st.st_mode & S_IFMT == S_IFDIR else {
                    throw ConfigurationError("data directory \(path): \(candidate) is not a directory")
                }
                guard access(candidate, W_OK | X_OK) == 0 else {
                    throw ConfigurationError("data directory \(path): \(candidate) is not writable")
                }
                return
            }
            guard errno == ENOENT, let slash = candidate.lastIndex(of: "/"), candidate != "/" else {
                throw ConfigurationError("data directory \(path): cannot inspect \(candidate): \(String(cString: strerror(errno)))")
            }
            candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
        }
    }
}
