import Digests
import Glibc
import TransferEngine

/// The digest of a request body exactly as it will be sent — a file, a blob, or a multipart body
/// wrapped around one — for `upload.send_digest`. Read once, before the first byte goes out:
/// `Repr-Digest` is a header, so it must be known before the body.
enum BodyDigest {
    /// Lowercase hex; nil when a file of the body cannot be read to its length.
    static func hex(of body: RequestBodySource, algorithm: DigestAlgorithm) -> String? {
        let digests = DigestSet([algorithm])
        switch body {
        case .none:
            break
        case .bytes(let bytes):
            bytes.withUnsafeBytes { digests.update($0) }
        case .segments(let segments):
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            for segment in segments {
                switch segment {
                case .bytes(let bytes):
                    bytes.withUnsafeBytes { digests.update($0) }
                case .file(let fd, let offset, let length):
                    var done: Int64 = 0
                    while done < length {
                        let n = pread(fd, buffer.baseAddress, Int(min(Int64(buffer.count), length - done)), off_t(offset + done))
                        if n < 0 && errno == EINTR { continue }
                        guard n > 0 else { return nil }
                        digests.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                        done += Int64(n)
                    }
                }
            }
        }
        return digests.finalize()[algorithm]
    }
}
