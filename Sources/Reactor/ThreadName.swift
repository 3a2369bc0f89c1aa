import CLinux
import Glibc

/// Names the calling thread for `top -H`, `perf` and `/proc/<pid>/task/*/comm`, so CPU time can be
/// told apart by thread (bench/downloads.sh prints it per name). Linux keeps at most 15 bytes.
public func nameCurrentThread(_ name: String) {
    _ = pthread_setname_np(pthread_self(), String(decoding: name.utf8.prefix(15), as: UTF8.self))
}
