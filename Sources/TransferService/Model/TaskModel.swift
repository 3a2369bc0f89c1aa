import Lifecycles

/// URLSessionTask kinds.
enum TaskKind: String, Sendable {
    case data, download, upload
}

// A task's state, phase and error codes are the task lifecycle's words.
typealias TaskState = Lifecycles.TaskState
typealias TaskPhase = Lifecycles.TaskPhase
typealias TaskErrorCode = Lifecycles.TaskErrorCode

struct TaskError: Sendable, Equatable {
    var code: TaskErrorCode
    var message: String
    var curlCode: Int?
    var resumeData: String?

    init(code: TaskErrorCode, message: String, curlCode: Int? = nil, resumeData: String? = nil) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
        self.resumeData = resumeData
    }
}

/// What the origin answered (the final response, after redirects).
struct TaskResponse: Sendable, Equatable {
    var status: Int
    var headers: [Header]
    var mimeType: String?
    var expectedContentLength: Int64?
    var suggestedFilename: String?
}

struct TaskProgress: Sendable, Equatable {
    var bytesReceived: Int64 = 0
    var bytesExpectedToReceive: Int64 = -1
    var bytesSent: Int64 = 0
    var bytesExpectedToSend: Int64 = -1
    var bytesPerSecond: Double = 0

    var fraction: Double? {
        if bytesExpectedToSend > 0 && bytesSent < bytesExpectedToSend {
            return Double(bytesSent) / Double(bytesExpectedToSend)
        }
        guard bytesExpectedToReceive > 0 else { return nil }
        return min(1, Double(bytesReceived) / Double(bytesExpectedToReceive))
    }
}

/// A finished download: where it is, how big, its sha256.
struct DownloadResult: Sendable, Equatable {
    var location: String
    var size: Int64
    var sha256: String
}

struct TaskMetrics: Sendable, Equatable {
    var attempts = 0
    var redirectCount = 0
    var remoteAddress: String?
    var httpProtocol: String?
    var reusedConnection = false
    var dnsMs = 0.0, connectMs = 0.0, tlsMs = 0.0, firstByteMs = 0.0, totalMs = 0.0
}

/// Where a task's request body comes from (PRODUCT.md "Tasks": inline text or base64, a blob, a
/// file under an allowed root, or the file of a finished download).
enum BodySource: Sendable, Equatable {
    /// Held in the task itself: small inline bodies, and every inline body of an ephemeral session.
    case inline([UInt8])
    /// A blob; `owned` when it is this task's own inline body, spooled to disk, and goes with it.
    case blob(id: String, owned: Bool)
    case file(String)
    /// The downloaded file of another task of the same session.
    case task(String)
}

/// A `multipart/form-data` body built around the file (RFC 7578).
struct MultipartSpec: Sendable, Equatable {
    var field = "file"
    var filename: String?
    var mimeType = "application/octet-stream"
    var fields: [Header] = []
}
