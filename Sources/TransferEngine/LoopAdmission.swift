/// Which waiting transfer of a loop starts next (fairness between sessions). Sessions that have a
/// transfer able to start take turns, round-robin, each offering its best one (priority, then
/// submission order): a session with 10,000 queued transfers gets one start per turn, as does a
/// session with one, so neither starves the other when slots are scarce. Discretionary sessions
/// take turns only when no transfer of a non-discretionary session waits anywhere in the engine.
///
/// Every change to a session's waiting transfers goes through here, so the counts stay exact.
/// A value type over loop-confined queues: the loop owns it and its thread is the only user.
struct LoopAdmission {
    private var urgent = SessionRing()
    private var discretionary = SessionRing()
    /// Transfers waiting (not running) in this loop's non-discretionary sessions.
    private(set) var urgentWaiting = 0
    private(set) var discretionaryWaiting = 0

    mutating func enqueue(_ transfer: Transfer, in queue: SessionQueue) {
        queue.enqueue(transfer)
        count(queue, 1)
        offer(queue)
    }

    mutating func removeWaiting(_ handle: TransferHandle, from queue: SessionQueue) -> Transfer? {
        guard let transfer = queue.removeWaiting(handle) else { return nil }
        count(queue, -1)
        return transfer
    }

    /// Something changed that may let `queue` start a transfer (a new one waits, one of its
    /// transfers finished, its limits changed): it joins the rotation if it is not in it.
    mutating func offer(_ queue: SessionQueue) {
        guard !queue.inRotation, queue.hasAdmissible else { return }
        queue.inRotation = true
        if queue.settings.discretionary { discretionary.append(queue) } else { urgent.append(queue) }
    }

    /// A session is about to change whether it is discretionary: its waiting transfers move from
    /// one count to the other. (Its place in a ring is corrected when the ring reaches it.)
    mutating func reclassify(_ queue: SessionQueue, discretionary now: Bool) {
        guard queue.settings.discretionary != now else { return }
        count(queue, -queue.waitingCount)
        queue.settings.discretionary = now
        count(queue, queue.waitingCount)
    }

    /// The next transfer to start, taken out of its session's queue (which counts it as running).
    /// `discretionaryAllowed` is asked only when a discretionary session has one to offer.
    mutating func next(discretionaryAllowed: () -> Bool) -> Transfer? {
        if let transfer = take(fromDiscretionary: false) { return transfer }
        guard !discretionary.isEmpty, discretionaryAllowed() else { return nil }
        return take(fromDiscretionary: true)
    }

    /// Whether some session could start a transfer if a slot were free.
    var hasOffers: Bool { !urgent.isEmpty || !discretionary.isEmpty }

    private mutating func take(fromDiscretionary wanted: Bool) -> Transfer? {
        while let queue = wanted ? discretionary.popFirst() : urgent.popFirst() {
            queue.inRotation = false
            if queue.settings.discretionary != wanted {
                offer(queue)
                continue
            }
            guard let transfer = queue.next() else { continue }
            count(queue, -1)
            // Back of the ring: the other sessions go first.
            offer(queue)
            return transfer
        }
        return nil
    }

    private mutating func count(_ queue: SessionQueue, _ delta: Int) {
        if queue.settings.discretionary { discretionaryWaiting += delta } else { urgentWaiting += delta }
    }
}

/// Sessions in turn: a FIFO over an array, compacted as it drains.
struct SessionRing {
    private var items: [SessionQueue] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    mutating func append(_ queue: SessionQueue) { items.append(queue) }

    mutating func popFirst() -> SessionQueue? {
        guard head < items.count else { return nil }
        let queue = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return queue
    }
}
