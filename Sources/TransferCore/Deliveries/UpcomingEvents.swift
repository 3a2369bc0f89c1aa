import TransferModel

/// The journaled events a delegate channel has still to look at, in `seq` order: read from the
/// journal a page at a time, and extended by events as they are committed — so that while the
/// channel keeps up, no delivery reads the store. A pure value: the channel feeds it pages and
/// committed events and takes events from it.
struct UpcomingEvents {
    private var events: [Event] = []
    private var next = 0
    /// Every journaled event up to this seq is in `events` or was taken.
    private(set) var known: Int64
    /// The journal may hold events after `known` that are not here (a page was full, or committed
    /// events arrived with a gap): the next `take` needs a page read first.
    private var incomplete = true

    /// Starts after `seq` (what was delivered), knowing nothing of what follows.
    package init(after seq: Int64) {
        known = seq
    }

    /// Whether the journal must be read (after `known`) before `take` can answer.
    var needsRead: Bool { next == events.count && incomplete }

    /// A page the journal gave after `known`; a page shorter than `pageSize` reached its end.
    mutating func read(_ page: [Event], pageSize: Int) {
        let fresh = page.filter { $0.seq > known }
        events += fresh
        known = fresh.last?.seq ?? known
        incomplete = page.count >= pageSize
    }

    /// Events just committed (published in seq order). They join only when they follow `known`
    /// with no gap and nothing unread lies before them; otherwise the journal is read again.
    mutating func committed(_ published: [Event]) {
        for event in published where event.type.isJournaled && event.seq > known {
            guard !incomplete, event.seq == known + 1 else {
                incomplete = true
                return
            }
            events.append(event)
            known = event.seq
        }
    }

    /// The next event, if one is known.
    mutating func take() -> Event? {
        guard next < events.count else { return nil }
        defer {
            next += 1
            if next == events.count {
                events.removeAll(keepingCapacity: true)
                next = 0
            }
        }
        return events[next]
    }
}
