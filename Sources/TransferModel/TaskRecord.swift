import Digests
import Lifecycles
/// Everything transferd knows of one task: the API's task object plus what it needs to run and
/// resume it. A value: copies are snapshots; the registry holds the current one.
package struct TaskRecord: Sendable {
    package let session: String
    package let id: String
    /// Creation order within the session: list order and pagination cursor.
    package let sequence: Int64
    package let kind: TaskKind
    package var state: TaskState
    package var phase: TaskPhase
    package var priority: Double
    package var description: String?
    package var url: String
    package var method: String
    package var headers: [Header]
    package var body: BodySource?
    package var multipart: MultipartSpec?
    /// Send the body's digest as `Repr-Digest` (`upload.send_digest`).
    package var sendDigest: SendDigest?
    /// `upload.resumable`, and where a resumable upload stands (its upload resource, the offset
    /// the origin confirmed), kept across restarts.
    package var resumable: UploadResumable = .auto
    package var uploadState: UploadResumption?
    package var destination: String?
    package var checksum: Checksum?
    /// What a download computes over its file (`download.digests`).
    package var digests: [DigestAlgorithm] = DigestAlgorithm.defaults
    /// The largest file a download may make (`download.max_bytes`); nil for no limit.
    package var maxBytes: Int64?
    package var beginAt: Timestamp?
    package var currentURL: String?
    package var response: TaskResponse?
    package var progress = TaskProgress()
    package var result: DownloadResult?
    package var error: TaskError?
    package var metrics = TaskMetrics()
    package let createdAt: Timestamp
    package var startedAt: Timestamp?
    package var completedAt: Timestamp?
    package var nextAttemptAt: Timestamp?
    package var idempotencyKey: String?
    /// sha256 of the creation body, so a retried `Idempotency-Key` can be told from a reused one.
    package var idempotencyHash: String?
    /// The reply that created the task (with an idempotency key only): a retry with the key gets
    /// these bytes again, not the task as it is by then. Kept in the row, so it lasts as the task does.
    package var creationReply: [UInt8]?
    /// The headers its session listed as sensitive when it was created (lowercased), hidden in
    /// what the API shows of the task besides those `SensitiveHeaders` always hides.
    package var sensitiveHeaders: [String] = []
    /// ETag or Last-Modified of the partial file, for `If-Range` when the transfer continues.
    package var validator: String?
    /// Where the digests of the partial file stood (running downloads that got that far), so a
    /// continued download hashes only the rest.
    package var digestCheckpoint: DigestCheckpoint?
    /// Where the response body (data and upload tasks) is kept, for `…/body`.
    package var bodyLocation: String?
    /// Resume data this task was created from, until its partial file is taken over.
    package var resumeFrom: ResumeData?
    /// The W3C `traceparent` of the request that created the task (version 00 form), when it
    /// carried a valid one.
    package var traceparent: String?

    package init(session: String, id: String, sequence: Int64, kind: TaskKind, url: String, method: String, createdAt: Timestamp) {
        self.session = session
        self.id = id
        self.sequence = sequence
        self.kind = kind
        self.url = url
        self.method = method
        self.createdAt = createdAt
        state = .suspended
        phase = .waiting
        priority = 0.5
        headers = []
    }

    package var isCompleted: Bool { state == .completed }

    /// A partial file of this task may be continued with `Range`: a download by GET. Other
    /// methods are not safe to repeat as a range, and data and upload bodies are not files kept.
    package var isResumable: Bool { kind == .download && method == "GET" }
}
