import Dispatch
import Glibc
import JSON
import Logging
import Reactor
import TestSupport
import TransferEngine
import TransferStore
import TransferVocabulary
@testable import TransferCore
@testable import TransferModel

/// A real `TaskCoordinator` as the service wires it — its own transfer engine, a data directory of
/// its own — on an `InMemoryTransferStore`, driven through the calls the API makes. A second
/// harness on the same store and directory is the process after a restart.
final class CoreHarness: @unchecked Sendable {
    /// Longest wait for anything the tests expect to happen: generous, since only a failure waits it out.
    static let patience = 10.0

    let store: InMemoryTransferStore
    let directory: String
    let engine: TransferEngine
    let coordinator: TaskCoordinator

    private static let curlReady: Void = TransferEngine.globalInit()

    /// A new process on `store` and `directory` (new ones when not given); recovery runs, as at
    /// start-up — unless `recovering` is false: a cluster replica, which takes sessions over one by one.
    /// `time`, `limits`: a clock moved by hand, a shorter webhook schedule.
    init(store: InMemoryTransferStore = InMemoryTransferStore(), directory: String? = nil, recovering: Bool = true,
         time: (any ServiceClock)? = nil, limits: TaskCoordinator.Limits = TaskCoordinator.Limits()) throws
    {
        Self.curlReady
        self.store = store
        self.directory = directory ?? Self.makeDirectory()
        engine = TransferEngine(loopCount: 1, policy: NetworkPolicy(parsing: "default")!)
        let layout = DataLayout(root: self.directory)
        coordinator = TaskCoordinator(store: store, blobs: nil, engine: engine, layout: layout,
                                      allowedRoots: try AllowedRoots(paths: [self.directory]), limits: limits,
                                      resumeKey: try ResumeKey.load(directory: layout.root),
                                      logger: Logger(label: "core-tests") { _ in SwiftLogNoOpLogHandler() }, time: time)
        if recovering { try coordinator.recover() } else { coordinator.sharesStore = true }
    }

    /// Stops this process's transfers (their tasks stay as a shutdown leaves them) and its timers.
    func stop() {
        engine.shutdown()
        coordinator.shutdown()
    }

    /// Stops, and removes the data directory.
    func tearDown() {
        stop()
        DataLayout.removeTree(directory)
    }

    private static func makeDirectory() -> String {
        var template = Array("/tmp/transferd-core-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp: \(errno)") }
        return String(cString: made)
    }

    // MARK: the coordinator's API, waited for

    @discardableResult
    func putSession(_ identifier: String, mode: SessionMode, configuration json: String = "{}", delegate: Delegate? = nil) throws -> SessionState {
        let configuration = try JSONParser.parse(Array(json.utf8))
        let request = TaskCoordinator.SessionRequest(
            mode: mode, configuration: try SessionConfiguration.parse(configuration), configurationJSON: configuration,
            settings: try SessionSettings(try SessionConfiguration.parse(configuration), roots: coordinator.allowedRoots),
            delegate: delegate.map { .some($0) }, delegateSecretGenerated: false)
        return try Self.wait { coordinator.putSession(identifier, request, completion: $0) }.get().0
    }

    /// Creates one task from its JSON as a client would POST it.
    func create(_ json: String, in session: SessionState, idempotency: IdempotencyClaim? = nil) throws -> Result<CreationOutcome, Refusal> {
        var requests = [try TaskCreationRequest.parse(try JSONParser.parse(Array(json.utf8)), field: "")]
        try coordinator.resolveResumeData(&requests)
        try coordinator.checkDestinations(requests, roots: coordinator.allowedRoots)
        return try Self.wait { coordinator.createTasks(in: session, requests, idempotency: idempotency, completion: $0) }
    }

    /// Creates a download of `url` and returns its id.
    func download(_ url: String, in session: SessionState) throws -> String {
        let outcome = try create(#"{"kind": "download", "request": {"url": "\#(url)"}}"#, in: session).get()
        guard case .created(let created) = outcome else { throw HarnessError("expected a new task, got \(outcome)") }
        return created[0].id
    }

    /// Starts a download of `size` bytes that the origin holds back halfway (until
    /// `origin.release()`, or for good), and returns its id once that half has arrived.
    func downloadHeldHalfway(_ size: Int, from origin: TestOrigin, key: String, in session: SessionState) throws -> String {
        let id = try download(origin.url("/stall-once/\(size)?key=\(key)"), in: session)
        try awaitProgress(of: id, atLeast: Int64(size / 2), in: session)
        return id
    }

    /// Runs `body` with a loopback origin and a new core with a session "s" of `mode`, and takes
    /// them down after.
    static func withSession(_ mode: SessionMode, _ body: (TestOrigin, CoreHarness, SessionState) throws -> Void) throws {
        let origin = try TestOrigin()
        let core = try CoreHarness()
        defer { core.tearDown(); origin.server.shutdown() }
        try body(origin, core, try core.putSession("s", mode: mode))
    }

    /// The task once it has completed.
    func completed(_ id: String, in session: SessionState) throws -> TaskRecord {
        let record = try Self.wait { coordinator.waitForTask(session, id, seconds: Self.patience, completion: $0) }.get()
        guard record.isCompleted else { throw HarnessError("task \(id) did not complete: \(record.state)") }
        return record
    }

    /// Waits, by long-polls, until the session journals an event of `type` (of task `id` when given).
    func awaitEvent(_ type: EventType, task id: String? = nil, in session: SessionState) throws {
        var after: Int64 = 0
        while true {
            let events = try Self.wait {
                coordinator.waitForEvents(session, after: after, limit: 100, seconds: Self.patience, completion: $0)
            }.get()
            guard let last = events.last else { throw HarnessError("no \(type.rawValue) event came") }
            if events.contains(where: { $0.type == type && (id == nil || $0.task == id) }) { return }
            after = last.seq
        }
    }

    /// Waits until the running task `id` has received at least `bytes` (polling its record: the
    /// engine's counters are read live, nothing announces them).
    func awaitProgress(of id: String, atLeast bytes: Int64, in session: SessionState) throws {
        try Self.poll("task \(id) to receive \(bytes) bytes") {
            (try? coordinator.record(session, id).progress.bytesReceived).map { $0 >= bytes } ?? false
        }
    }

    /// The session's journal as stored, in seq order.
    func storedEvents(of session: String) throws -> [Event] {
        try store.events(session: session, after: 0, limit: 10_000)
    }

    // MARK: waiting

    /// Runs `start` and waits for the value it hands its completion.
    static func wait<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) throws -> T {
        let box = Box<T>()
        start { value in
            box.value.withLock { $0 = value }
            box.done.signal()
        }
        guard box.done.wait(timeout: .now() + patience) == .success, let value = box.value.withLock({ $0 }) else {
            throw HarnessError("no answer within \(patience) s")
        }
        return value
    }

    /// Checks `condition` every few milliseconds until it holds.
    static func poll(_ what: String, _ condition: () -> Bool) throws {
        let deadline = DispatchTime.now() + patience
        while !condition() {
            guard DispatchTime.now() < deadline else { throw HarnessError("waited in vain for \(what)") }
            usleep(5_000)
        }
    }

    private final class Box<T: Sendable>: Sendable {
        let value = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
