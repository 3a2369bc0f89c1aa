/// Identifies a scheduled timer so it can be cancelled.
public struct TimerID: Hashable, Sendable {
    let raw: UInt64
}

/// A binary min-heap of deadlines. Cancellation is lazy: the work is forgotten at once and its heap
/// entry skipped when it surfaces, and the heap is rebuilt when dead entries outnumber live ones,
/// so a timer re-armed on every curl callback cannot grow it without bound.
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var work: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    mutating func insert(deadline: UInt64, _ action: @escaping () -> Void) -> TimerID {
        let id = nextID
        nextID += 1
        work[id] = action
        push(Entry(deadline: deadline, id: id))
        return TimerID(raw: id)
    }

    mutating func cancel(_ id: TimerID) {
        guard work.removeValue(forKey: id.raw) != nil else { return }
        if heap.count > 64 && heap.count > 2 * work.count { compact() }
    }

    var nextDeadline: UInt64? {
        mutating get {
            dropCancelledTop()
            return heap.first?.deadline
        }
    }

    /// Removes and returns the work of the earliest timer due at `now`, if any.
    mutating func popExpired(now: UInt64) -> (() -> Void)? {
        while let top = heap.first, top.deadline <= now {
            pop()
            if let action = work.removeValue(forKey: top.id) { return action }
        }
        return nil
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, work[top.id] == nil { pop() }
    }

    private mutating func compact() {
        heap.removeAll { work[$0.id] == nil }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    private mutating func push(_ e: Entry) {
        heap.append(e)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].deadline < heap[parent].deadline else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func pop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count && heap[l].deadline < heap[smallest].deadline { smallest = l }
            if r < heap.count && heap[r].deadline < heap[smallest].deadline { smallest = r }
            if smallest == i { return }
            heap.swapAt(i, smallest)
            i = smallest
        }
    }
}
