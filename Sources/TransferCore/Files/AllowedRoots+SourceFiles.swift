import Glibc
import TransferModel

extension AllowedRoots {
    /// Opens a file a request names to be read (an upload's `from_file`, a session's TLS file)
    /// beneath one of the roots; 403 outside them, 422 when it is not an existing regular file.
    func openSourceFile(_ path: String, field: String) throws(Refusal) -> Int32 {
        let fd: Int32
        do {
            fd = try openFile(path, flags: O_RDONLY)
        } catch .notAllowed {
            throw Refusal(.forbidden, "path_not_allowed", "\(path) is not inside a path the caller may use (--allow-path, or its allow_paths)", field: field)
        } catch .missing {
            throw Refusal(.invalid, "file_does_not_exist", "\(path) does not exist", field: field)
        } catch {
            throw Refusal(.invalid, "cannot_open_file", "\(path) cannot be opened", field: field)
        }
        // fstat on the open descriptor: what is checked is what will be read.
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw Refusal(.invalid, "cannot_open_file", "\(path) is not a regular file", field: field)
        }
        return fd
    }
}
