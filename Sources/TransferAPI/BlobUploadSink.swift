import Digests
import Glibc
import HTTPServer
import JSON
import TransferCore
import TransferEngine
import TransferModel

/// Receives `POST /v1/blobs`: the body goes to a temporary file as it arrives (never held whole
/// in memory), hashed a step behind on another core; at the end the file is fsynced and renamed,
/// the row committed, and only then is the client told 201.
final class BlobUploadSink: RequestBodySink, @unchecked Sendable {
    private let blobs: BlobStore
    /// The principal storing it: the blob's owner.
    private let principal: String
    private let maxBytes: Int64
    private let finishing: (@escaping @Sendable () -> Void) -> Void
    /// Given the body's sha256 once it is known: stores the blob, or answers for it (a replayed
    /// `Idempotency-Key`) and discards the upload — now or later, from any thread.
    private let admit: Admit
    typealias Admit = @Sendable (_ sha256: String, Responder, _ discard: @escaping @Sendable () -> Void, _ store: @escaping @Sendable () -> Void) -> Void
    private let id = Blob.newID()
    private let fd: Int32
    private let hasher: FileHasher
    private var size: Int64 = 0

    init(blobs: BlobStore, principal: String, maxBytes: Int64, declaredLength: Int64?,
         admit: @escaping Admit,
         finishing: @escaping (@escaping @Sendable () -> Void) -> Void) throws(HTTPProblem)
    {
        if let declaredLength, declaredLength > maxBytes {
            throw HTTPProblem(413, "content_too_large", "a blob may hold at most \(maxBytes) bytes")
        }
        self.blobs = blobs
        self.principal = principal
        self.maxBytes = maxBytes
        self.finishing = finishing
        self.admit = admit
        // Read-write: the hasher reads the file back behind the writes.
        fd = open(blobs.temporaryPath(id), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HTTPProblem(507, "insufficient_storage", "cannot create the blob file: \(String(cString: strerror(errno)))") }
        hasher = FileHasher(fd: fd, algorithms: [.sha256])
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) {
        guard size + Int64(bytes.count) <= maxBytes else {
            throw HTTPProblem(413, "content_too_large", "a blob may hold at most \(maxBytes) bytes")
        }
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let full = errno == ENOSPC || errno == EDQUOT || errno == EFBIG
                throw HTTPProblem(full ? 507 : 500, full ? "insufficient_storage" : "internal_error",
                                  "cannot write the blob: \(String(cString: strerror(errno)))")
            }
            done += n
        }
        size += Int64(bytes.count)
        hasher.advance(to: size)
    }

    func finish(_ responder: Responder) {
        let (blobs, fd, id, size, principal) = (blobs, fd, id, size, principal)
        hasher.finish(size: size) { [finishing, admit] digests in
            finishing {
                guard let digest = digests?[.sha256], fsync(fd) == 0 else {
                    close(fd)
                    unlink(blobs.temporaryPath(id))
                    return responder.respond(Refusal(.insufficientStorage, "insufficient_storage", "cannot store the blob").response)
                }
                close(fd)
                admit(digest, responder, { unlink(blobs.temporaryPath(id)) }) {
                    guard rename(blobs.temporaryPath(id), blobs.path(id)) == 0 else {
                        unlink(blobs.temporaryPath(id))
                        return responder.respond(Refusal(.insufficientStorage, "insufficient_storage", "cannot store the blob").response)
                    }
                    let blob = Blob(id: id, size: size, sha256: digest, createdAt: Timestamp.now(), principal: principal)
                    blobs.insert(blob) { result in
                        switch result {
                        case .success:
                            var json = JSONWriter()
                            blob.encode(into: &json)
                            responder.respond(.json(json.bytes, status: 201, headers: HTTPHeaders([("Location", "/v1/blobs/\(id)")])))
                        case .failure(let error):
                            unlink(blobs.path(id))
                            responder.respond(Refusal.storeFailure(error).response)
                        }
                    }
                }
            }
        }
    }

    func abort() {
        let (blobs, fd, id) = (blobs, fd, id)
        hasher.cancel { _ in
            close(fd)
            unlink(blobs.temporaryPath(id))
        }
    }
}
