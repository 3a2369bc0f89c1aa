/// Everything transferd knows of one task: the API's task object plus what it needs to run and
/// resume it. A value: copies are snapshots; the registry holds the current one.
struct TaskRecord: Sendable {
    let session: String
    let id: String
    /// Creation order within the session: list order and pagination cursor.
    let sequence: Int64
    let kind: TaskKind
    var state: TaskState
    var phase: TaskPhase
    var priority: Double
    var description: String?
    var url: String
    var method: String
    var headers: [Header]
    var body: BodySource?
    var multipart: MultipartSpec?
    var destination: String?
    var checksumSHA256: String?
    var beginAt: Timestamp?
    var currentURL: String?
    var response: TaskResponse?
    var progress = TaskProgress()
    var result: DownloadResult?
    var error: TaskError?
    var metrics = TaskMetrics()
    let createdAt: Timestamp
    var startedAt: Timestamp?
    var completedAt: Timestamp?
    var nextAttemptAt: Timestamp?
    var idempotencyKey: String?
    /// sha256 of the creation body, so a retried `Idempotency-Key` can be told from a reused one.
    var idempotencyHash: String?
    /// ETag or Last-Modified of the partial file, for `If-Range` when the transfer continues.
    var validator: String?
    /// Where the response body (data and upload tasks) is kept, for `…/body`.
    var bodyLocation: String?
    /// Resume data this task was created from, until its partial file is taken over.
    var resumeFrom: ResumeData?

    init(session: String, id: String, sequence: Int64, kind: TaskKind, url: String, method: String, createdAt: Timestamp) {
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

    var isCompleted: Bool { state == .completed }

    /// A partial file of this task may be continued with `Range`: a download by GET. Other
    /// methods are not safe to repeat as a range, and data and upload bodies are not files kept.
    var isResumable: Bool { kind == .download && method == "GET" }
}
