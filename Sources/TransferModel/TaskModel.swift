import Digests
import Lifecycles
import TransferVocabulary

/// URLSessionTask kinds.
package enum TaskKind: String, Sendable, CaseIterable {
    case data, download, upload
}

// A task's state and phase are the task lifecycle's words; its error codes, shared with the
// engine, the vocabulary's.
package typealias TaskState = Lifecycles.TaskState
package typealias TaskPhase = Lifecycles.TaskPhase
package typealias TaskErrorCode = TransferVocabulary.TaskErrorCode

package struct TaskError: Sendable, Equatable {
    package var code: TaskErrorCode
    package var message: String
    package var curlCode: Int?
    package var resumeData: String?
    /// The origin's status, for `http_error`.
    package var status: Int?

    package init(code: TaskErrorCode, message: String, curlCode: Int? = nil, resumeData: String? = nil, status: Int? = nil) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
        self.resumeData = resumeData
        self.status = status
    }
}

/// What the origin answered (the final response, after redirects).
package struct TaskResponse: Sendable, Equatable {
    package var status: Int
    package var headers: [Header]
    var mimeType: String?
    var expectedContentLength: Int64?
    package var suggestedFilename: String?

    package init(status: Int, headers: [Header], mimeType: String?, expectedContentLength: Int64?, suggestedFilename: String?) {
        self.status = status
        self.headers = headers
        self.mimeType = mimeType
        self.expectedContentLength = expectedContentLength
        self.suggestedFilename = suggestedFilename
    }
}

package struct TaskProgress: Sendable, Equatable {
    package var bytesReceived: Int64 = 0
    package var bytesExpectedToReceive: Int64 = -1
    package var bytesSent: Int64 = 0
    package var bytesExpectedToSend: Int64 = -1
    package var bytesPerSecond: Double = 0

    var fraction: Double? {
        if bytesExpectedToSend > 0 && bytesSent < bytesExpectedToSend {
            return Double(bytesSent) / Double(bytesExpectedToSend)
        }
        guard bytesExpectedToReceive > 0 else { return nil }
        return min(1, Double(bytesReceived) / Double(bytesExpectedToReceive))
    }
}

/// A finished download: where it is, how big, its digests (those the task asked for).
package struct DownloadResult: Sendable, Equatable {
    package var location: String
    package var size: Int64
    /// In the algorithms' fixed order (`DigestAlgorithm.allCases`).
    package var digests: [(DigestAlgorithm, String)]
    /// The digests the origin declared and the file matched (`DeclaredDigest.source`).
    package var verified: [String]

    package init(location: String, size: Int64, digests: [(DigestAlgorithm, String)], verified: [String] = []) {
        self.location = location
        self.size = size
        self.digests = DigestAlgorithm.allCases.compactMap { a in digests.first { $0.0 == a } }
        self.verified = verified
    }

    package var sha256: String? { digests.first { $0.0 == .sha256 }?.1 }

    package static func == (a: DownloadResult, b: DownloadResult) -> Bool {
        a.location == b.location && a.size == b.size && a.digests.elementsEqual(b.digests) { $0 == $1 } && a.verified == b.verified
    }
}

package struct TaskMetrics: Sendable, Equatable {
    package var attempts = 0
    package var redirectCount = 0
    package var remoteAddress: String?
    package var httpProtocol: String?
    package var reusedConnection = false
    package var dnsMs = 0.0, connectMs = 0.0, tlsMs = 0.0, firstByteMs = 0.0, totalMs = 0.0
}

/// Where a task's request body comes from (inline text or base64, a blob, a
/// file under an allowed root, or the file of a finished download).
package enum BodySource: Sendable, Equatable {
    /// Held in the task itself: small inline bodies, and every inline body of an ephemeral session.
    case inline([UInt8])
    /// A blob; `owned` when it is this task's own inline body, spooled to disk, and goes with it.
    case blob(id: String, owned: Bool)
    case file(String)
    /// The downloaded file of another task of the same session.
    case task(String)
}

/// A `multipart/form-data` body built around the file (RFC 7578).
package struct MultipartSpec: Sendable, Equatable {
    package var field = "file"
    package var filename: String?
    package var mimeType = "application/octet-stream"
    package var fields: [Header] = []
}
