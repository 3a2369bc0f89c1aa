import CLinux
import Glibc
import Synchronization

/// Something that owns a file descriptor registered with an `EventLoop`.
/// `handleEvents` is always called on the loop's own thread. A class rather than a protocol so the
/// loop dispatches each event with one virtual call, not a dynamic protocol cast.
/// `@unchecked Sendable` because subclasses are confined to their loop's thread: other threads
/// reach them only through `EventLoop.execute`, which runs the work on that thread.
open class EventHandler: @unchecked Sendable {
    public init() {}
    open func handleEvents(_ events: UInt32) {}
}

/// One thread running `epoll_wait`, with an eventfd for cross-thread work and a timerfd for timers.
///
/// Why a thread of our own and not DispatchSources (docs/ARCHITECTURE.md): `EPOLL_CTL_DEL` is
/// synchronous, so a descriptor that curl or a connection closes is out of the set before `close`
/// returns (the DispatchSource cancel race crashed Linux URLSession for years); one wake-up handles a
/// whole batch of ready descriptors without allocating a block per event; and all state owned by the
/// loop (connections, a curl multi handle) is confined to one thread, so it needs no locks.
public final class EventLoop: @unchecked Sendable {
    public let name: String
    private let epollFD: Int32
    private let wakeFD: Int32
    private let timerFD: Int32
    /// A pthread mutex (`Locked`), not `Synchronization.Mutex`: that one locks by futex inside the
    /// standard library, which ThreadSanitizer cannot see, so every hand-over of work through it
    /// was reported as a race and real ones here would be lost among them.
    private let queued = Locked<[@Sendable () -> Void]>([])
    private let wakePending = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)
    private let threadID = Atomic<UInt64>(0)
    private var thread: pthread_t?

    // Loop-confined state.
    private var handlers: [Int32: EventHandler] = [:]
    private var retired: [EventHandler] = []
    private var timers = TimerHeap()
    private var armedDeadline: UInt64 = .max

    public init(name: String) {
        self.name = name
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        timerFD = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        precondition(epollFD >= 0 && wakeFD >= 0 && timerFD >= 0, "epoll/eventfd/timerfd: \(errnoDescription())")
        addRaw(wakeFD, events: UInt32(EPOLLIN.rawValue), tag: 1)
        addRaw(timerFD, events: UInt32(EPOLLIN.rawValue), tag: 2)
    }

    deinit {
        close(timerFD)
        close(wakeFD)
        close(epollFD)
    }

    /// Starts the loop on a new thread.
    public func start() {
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            let loop = Unmanaged<EventLoop>.fromOpaque(arg!).takeRetainedValue()
            loop.run()
            return nil
        }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        thread = tid
    }

    /// Asks the loop to stop after the current batch and waits for its thread to end.
    public func stopAndJoin() {
        stopRequested.store(true, ordering: .releasing)
        wake()
        if let thread, !inLoop { pthread_join(thread, nil) }
    }

    public var inLoop: Bool { threadID.load(ordering: .relaxed) == UInt64(pthread_self()) }

    /// Runs `work` on the loop thread, after the current batch of events.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        queued.withLock { $0.append(work) }
        wake()
    }

    // MARK: descriptors (loop thread only)

    /// Adds `fd` to the interest set. The handler stays alive until `deregister`.
    public func register(_ fd: Int32, events: UInt32, handler: EventHandler) {
        assert(inLoop || threadID.load(ordering: .relaxed) == 0)
        handlers[fd] = handler
        var ev = epoll_event()
        ev.events = events
        ev.data.ptr = UnsafeMutableRawPointer(Unmanaged.passUnretained(handler).toOpaque())
        if epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &ev) != 0 {
            preconditionFailure("epoll_ctl ADD \(fd): \(errnoDescription())")
        }
    }

    public func modify(_ fd: Int32, events: UInt32) {
        guard let handler = handlers[fd] else { return }
        var ev = epoll_event()
        ev.events = events
        ev.data.ptr = UnsafeMutableRawPointer(Unmanaged.passUnretained(handler).toOpaque())
        _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &ev)
    }

    /// Removes `fd` synchronously; the caller may close it as soon as this returns. The handler is
    /// kept alive until the current batch ends, since later events of the batch may point at it.
    public func deregister(_ fd: Int32) {
        guard let handler = handlers.removeValue(forKey: fd) else { return }
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
        retired.append(handler)
    }

    // MARK: timers (loop thread only)

    /// Runs `work` on the loop at `deadline` (monotonic nanoseconds). Cancel with `cancelTimer`.
    @discardableResult
    public func scheduleTimer(at deadline: UInt64, _ work: @escaping () -> Void) -> TimerID {
        let id = timers.insert(deadline: deadline, work)
        rearmIfNeeded()
        return id
    }

    public func cancelTimer(_ id: TimerID) {
        timers.cancel(id)
    }

    // MARK: the loop

    private func run() {
        threadID.store(UInt64(pthread_self()), ordering: .relaxed)
        nameCurrentThread(name)
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        while !stopRequested.load(ordering: .acquiring) {
            let n = epoll_wait(epollFD, events, Int32(capacity), -1)
            if n < 0 {
                if errno == EINTR { continue }
                preconditionFailure("epoll_wait: \(errnoDescription())")
            }
            for i in 0..<Int(n) {
                let ev = events[i]
                guard let ptr = ev.data.ptr else { continue }
                switch UInt(bitPattern: ptr) {
                case 1: drainWakeups()
                case 2: fireTimers()
                default:
                    Unmanaged<EventHandler>.fromOpaque(ptr).takeUnretainedValue().handleEvents(ev.events)
                }
            }
            retired.removeAll(keepingCapacity: true)
            runQueued()
        }
        runQueued()
        // Stopped for good: no handler is called and no timer fires any more. Their owners
        // (connections, a curl multi, a server worker) hold this loop, and timers' work holds
        // them, so keeping these would keep all of it alive in a cycle after a stop (LeakSanitizer
        // found every stopped server and engine leaked so).
        handlers.removeAll()
        retired.removeAll()
        timers = TimerHeap()
    }

    private func drainWakeups() {
        var value: UInt64 = 0
        _ = read(wakeFD, &value, 8)
    }

    private func runQueued() {
        wakePending.store(false, ordering: .sequentiallyConsistent)
        let work = queued.withLock { q -> [@Sendable () -> Void] in
            let w = q
            q.removeAll(keepingCapacity: true)
            return w
        }
        for item in work { item() }
    }

    private func fireTimers() {
        var expirations: UInt64 = 0
        _ = read(timerFD, &expirations, 8)
        armedDeadline = .max
        let now = MonotonicClock.now()
        while let work = timers.popExpired(now: now) { work() }
        rearmIfNeeded()
    }

    private func rearmIfNeeded() {
        guard let next = timers.nextDeadline else { return }
        guard next < armedDeadline else { return }
        armedDeadline = next
        var spec = itimerspec()
        // A deadline already past still needs a non-zero value: zero would disarm the timer.
        let at = max(next, 1)
        spec.it_value.tv_sec = Int(at / 1_000_000_000)
        spec.it_value.tv_nsec = Int(at % 1_000_000_000)
        _ = timerfd_settime(timerFD, Int32(TFD_TIMER_ABSTIME), &spec, nil)
    }

    private func wake() {
        if wakePending.exchange(true, ordering: .sequentiallyConsistent) { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func addRaw(_ fd: Int32, events: UInt32, tag: UInt) {
        var ev = epoll_event()
        ev.events = events
        ev.data.ptr = UnsafeMutableRawPointer(bitPattern: tag)
        precondition(epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &ev) == 0)
    }
}

public func errnoDescription(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
