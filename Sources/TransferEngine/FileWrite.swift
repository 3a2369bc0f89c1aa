import Glibc
import TransferVocabulary

/// Writing all of a buffer at an offset, as the output of a download needs it: `pwrite` until
/// everything is written, through interruptions; a failure names its errno.
enum FileWrite {
    struct Failure: Error {
        let errno: Int32
        var transferFailure: TransferFailure {
            TransferFailure(.cannotWriteToFile, "cannot write the file: \(String(cString: strerror(errno)))")
        }
    }

    static func all(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Failure) {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(errno: errno)
            }
            done += n
        }
    }
}
