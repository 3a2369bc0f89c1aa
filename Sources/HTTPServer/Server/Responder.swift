import Reactor
import Synchronization

/// Answers one request, from any thread, exactly once. Handlers that must wait (on the store, a
/// long-poll) keep it and answer later; the connection reads nothing further meanwhile, which keeps
/// pipelined responses in order.
public final class Responder: @unchecked Sendable {
    private let connection: Connection
    private let loop: EventLoop
    private let generation: UInt64
    private let answered = Atomic<Bool>(false)
    public let requestID: String

    init(connection: Connection, loop: EventLoop, generation: UInt64, requestID: String) {
        self.connection = connection
        self.loop = loop
        self.generation = generation
        self.requestID = requestID
    }

    /// What a handler asked to happen to its response before it goes out (set before the handler
    /// hands the responder on, so the thread that answers sees it).
    private var interceptor: (@Sendable (HTTPResponse, @escaping @Sendable (HTTPResponse) -> Void) -> Void)?

    /// Has `transform` see the response this responder is given, and send it (or another) on
    /// through the function it is passed, now or later, from any thread.
    public func intercept(_ transform: @escaping @Sendable (HTTPResponse, _ send: @escaping @Sendable (HTTPResponse) -> Void) -> Void) {
        interceptor = transform
    }

    public func respond(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else {
            assertionFailure("a request was answered twice")
            return
        }
        guard let interceptor else { return send(response) }
        interceptor(response) { [self] in send($0) }
    }

    private func send(_ response: HTTPResponse) {
        if loop.inLoop {
            connection.send(response, generation: generation)
        } else {
            let connection = connection, generation = generation
            loop.execute { connection.send(response, generation: generation) }
        }
    }

    public func respond(problem: HTTPProblem) {
        respond(.problem(problem))
    }

    /// A handler that forgets to answer would hang its client; answer for it.
    deinit {
        if !answered.load(ordering: .acquiring) {
            let connection = connection, generation = generation
            let response = HTTPResponse.problem(HTTPProblem(500, "internal_error", "the request was not answered"))
            loop.execute { connection.send(response, generation: generation) }
        }
    }
}

/// The body of a streamed response (Server-Sent Events): each `write` goes out as one chunk.
/// Safe to use from any thread. `onTermination` runs once, when the stream ends for any reason
/// (finished, client gone, server shutting down).
public final class ResponseStream: @unchecked Sendable {
    private let connection: Connection
    private let loop: EventLoop
    private let generation: UInt64
    private let state = Locked<(closed: Bool, onTermination: (@Sendable () -> Void)?)>((false, nil))

    init(connection: Connection, loop: EventLoop, generation: UInt64) {
        self.connection = connection
        self.loop = loop
        self.generation = generation
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Registers what to do when the stream ends; runs at once if it already has.
    public func onTermination(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { s -> Bool in
            if s.closed { return true }
            s.onTermination = action
            return false
        }
        if runNow { action() }
    }

    public func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, !isClosed else { return }
        let connection = connection, generation = generation
        loop.execute { connection.writeChunk(bytes, generation: generation) }
    }

    /// Writes `bytes`, then runs `whenSent` on the connection's thread once they (and all written
    /// before them) went to the socket — never, if the stream ends first. A producer faster than
    /// its client (a relay) waits for it before writing more, instead of piling bytes up here.
    public func write(_ bytes: [UInt8], whenSent: @escaping @Sendable () -> Void) {
        guard !bytes.isEmpty, !isClosed else { return }
        let connection = connection, generation = generation
        loop.execute { connection.writeChunk(bytes, generation: generation, whenSent: whenSent) }
    }

    /// Ends the response by closing the connection: the body could not be completed, and the
    /// client must not take what it got for all of it.
    public func abort() {
        guard !isClosed else { return }
        let connection = connection, generation = generation
        loop.execute { connection.abortStream(generation: generation) }
    }

    public func finish() {
        guard !isClosed else { return }
        let connection = connection, generation = generation
        loop.execute { connection.finishStream(generation: generation) }
    }

    /// Called by the connection when the stream is over.
    func terminated() {
        let action = state.withLock { s -> (@Sendable () -> Void)? in
            guard !s.closed else { return nil }
            s.closed = true
            defer { s.onTermination = nil }
            return s.onTermination
        }
        action?()
    }
}
