import Glibc

/// A thread of its own that takes what callers queue in groups: each time it wakes it hands
/// everything queued so far (up to `maxGroup` items) to `handle`, in submission order. The store
/// writers (SQLite's and PostgreSQL's) commit a group in one transaction this way.
public final class GroupingThread<Item>: @unchecked Sendable {
    private let queue = Locked<(items: [Item], stopping: Bool)>(([], false))
    private let signal = ThreadSignal()
    private let finished = ThreadSignal()
    private let maxGroup: Int
    /// Let go when the thread stops: it usually holds the owner, which holds this thread.
    private var handle: (([Item]) -> Void)?

    /// `handle` runs on the thread only, one group at a time.
    public init(name: String, maxGroup: Int, handle: @escaping ([Item]) -> Void) {
        self.maxGroup = maxGroup
        self.handle = handle
        startThread(named: name) { self.run() }
    }

    /// Queues `item`; false once `close()` was called (the item is not taken).
    public func submit(_ item: Item) -> Bool {
        let accepted = queue.withLock { q -> Bool in
            guard !q.stopping else { return false }
            q.items.append(item)
            return true
        }
        if accepted { signal.post() }
        return accepted
    }

    /// Hands over what is queued, then stops the thread; returns once it has.
    public func close() {
        queue.withLock { $0.stopping = true }
        signal.post()
        finished.wait()
    }

    private func run() {
        while true {
            signal.wait()
            while true {
                let (group, stopping) = queue.withLock { q -> ([Item], Bool) in
                    let group = Array(q.items.prefix(maxGroup))
                    q.items.removeFirst(group.count)
                    return (group, q.stopping && q.items.isEmpty)
                }
                if !group.isEmpty { handle?(group) }
                if stopping {
                    handle = nil
                    finished.post()
                    return
                }
                if group.isEmpty { break }
            }
        }
    }
}

/// Runs `body` on a new detached thread named `name`. A C thread entry cannot refer to a generic
/// type's context, so the body travels in a plain box.
func startThread(named name: String, _ body: @escaping () -> Void) {
    final class Start {
        let name: String
        let body: () -> Void

        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let box = Unmanaged.passRetained(Start(name: name, body: body))
    var thread = pthread_t()
    pthread_create(&thread, nil, { arg in
        let start = Unmanaged<Start>.fromOpaque(arg!).takeRetainedValue()
        nameCurrentThread(start.name)
        start.body()
        return nil
    }, box.toOpaque())
    pthread_detach(thread)
}
