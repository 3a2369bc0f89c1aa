import Testing
@testable import TransferEngine
import TransferVocabulary

/// Every state of the engine's transfer machine against every event: the rows below say what each
/// pair does; a pair not listed must be refused as invalid, leaving the value as it was.
struct TransferLifecycleTests {
    typealias L = TransferLifecycle
    typealias S = L.State
    typealias E = L.Event
    typealias A = L.Action
    typealias C = L.Connection

    static let failure = TransferFailure(.cannotOpenFile, "cannot open the output")
    static let redirect = CredentialRedirect(url: "https://other.example/next", method: "GET", sendsBody: false)

    static let connections: [C] = [
        C(), C(pausedBy: [.pacer]), C(pausedBy: [.directOutput]), C(pausedBy: [.pacer, .directOutput]),
        C(redirect: redirect), C(stop: .fenced), C(redirect: redirect, stop: .fenced),
    ]

    static let endings: [L.Ending] = [
        .finished, .idle, .stopped(.cancelled, started: true), .stopped(.shutdown, started: false), .refused(failure),
    ]

    static let states: [S] = [.waiting, .preparing(stop: nil), .preparing(stop: .suspended)]
        + connections.map { .running($0) } + endings.map { .ended($0) }

    static let events: [E] = [
        .admitted(preparing: true), .admitted(preparing: false), .prepared, .refused(failure),
        .stop(.cancelled), .stop(.suspended), .fenced,
        .paused(.pacer), .paused(.directOutput), .unpaused(.pacer), .unpaused(.directOutput),
        .redirect(redirect), .idleTimeout, .handleDone(writeRefused: true), .handleDone(writeRefused: false),
    ]

    struct Row {
        let from: S
        let event: E
        let to: S
        let actions: [A]
    }

    static func rows(_ from: S, _ list: [(E, S, [A])]) -> [Row] {
        list.map { Row(from: from, event: $0.0, to: $0.1, actions: $0.2) }
    }

    /// What a running handle does with each event: the rules for one connection, written out.
    static func running(_ c: C) -> [Row] {
        let from = S.running(c)
        // Ending or restarting the handle takes it off the pacer's list first if it is on it.
        let leave: [A] = c.pausedBy.contains(.pacer) ? [.leavePacer] : []
        let done = S.ended(c.stop.map { .stopped($0, started: true) } ?? .finished)
        var list: [(E, S, [A])] = [
            (.stop(.cancelled), .ended(.stopped(.cancelled, started: true)), leave + [.finish]),
            (.stop(.suspended), .ended(.stopped(.suspended, started: true)), leave + [.finish]),
            (.fenced, .running(C(pausedBy: c.pausedBy, redirect: c.redirect, stop: .fenced)), []),
            (.redirect(redirect), .running(C(pausedBy: c.pausedBy, redirect: redirect, stop: c.stop)), []),
            (.handleDone(writeRefused: false), done, leave + [.finish]),
        ]
        for reason in [L.PauseReason.pacer, .directOutput] {
            list.append((.paused(reason), .running(C(pausedBy: c.pausedBy.union([reason]), redirect: c.redirect, stop: c.stop)), []))
            if c.pausedBy.contains(reason) {
                list.append((.unpaused(reason), .running(C(pausedBy: c.pausedBy.subtracting([reason]), redirect: c.redirect, stop: c.stop)),
                             [.unpause]))
            } else {
                list.append((.unpaused(reason), from, []))
            }
        }
        if c.redirect != nil && c.stop == nil {
            list.append((.handleDone(writeRefused: true), .running(C()), leave + [.restart(redirect)]))
        } else {
            list.append((.handleDone(writeRefused: true), done, leave + [.finish]))
        }
        // Paused time is not idle time: the sweep never asks then.
        if c.pausedBy.isEmpty {
            list.append((.idleTimeout, c.stop == nil ? .ended(.idle) : done, [.finish]))
        }
        return rows(from, list)
    }

    static let table: [Row] = {
        var t: [Row] = []
        t += rows(.waiting, [
            (.admitted(preparing: true), .preparing(stop: nil), [.prepareFiles]),
            (.admitted(preparing: false), .running(C()), [.launch]),
            (.refused(failure), .ended(.refused(failure)), [.refuse]),
            (.fenced, .ended(.stopped(.fenced, started: false)), [.refuse]),
            (.stop(.cancelled), .ended(.stopped(.cancelled, started: false)), [.withdraw]),
            (.stop(.suspended), .ended(.stopped(.suspended, started: false)), [.withdraw]),
        ])
        t += rows(.preparing(stop: nil), [
            (.stop(.cancelled), .preparing(stop: .cancelled), []),
            (.stop(.suspended), .preparing(stop: .suspended), []),
            (.prepared, .running(C()), [.launch]),
            (.refused(failure), .ended(.refused(failure)), [.refuse]),
        ])
        // Stopped while its files were opened: the later stop stands, and whatever the files did,
        // the outcome says stopped.
        t += rows(.preparing(stop: .suspended), [
            (.stop(.cancelled), .preparing(stop: .cancelled), []),
            (.stop(.suspended), .preparing(stop: .suspended), []),
            (.prepared, .ended(.stopped(.suspended, started: false)), [.refuse]),
            (.refused(failure), .ended(.stopped(.suspended, started: false)), [.refuse]),
        ])
        for c in connections { t += running(c) }
        for ending in endings {
            let from = S.ended(ending)
            t += rows(from, [E.stop(.cancelled), .stop(.suspended), .unpaused(.pacer), .unpaused(.directOutput)].map { ($0, from, []) })
            t += rows(from, [(.fenced, .ended(.stopped(.fenced, started: ending.started)), [])])
        }
        return t
    }()

    @Test func everyStateAgainstEveryEvent() {
        var pairs = 0
        for state in Self.states {
            for event in Self.events {
                pairs += 1
                let listed = Self.table.filter { $0.from == state && $0.event == event }
                #expect(listed.count <= 1, "\(state) + \(event) is listed twice")
                let start = L(state)
                var machine = start
                let outcome = machine.handle(event)
                guard let row = listed.first else {
                    #expect(outcome == .invalid(from: start, event: event), "\(state) + \(event)")
                    #expect(machine == start, "an invalid \(event) changed \(state)")
                    continue
                }
                #expect(outcome == .perform(row.actions), "\(state) + \(event)")
                #expect(machine.current == row.to, "\(state) + \(event) reached \(machine.current)")
            }
        }
        #expect(pairs == 15 * 15)
        #expect(Self.table.count == 113)
        #expect(Self.table.allSatisfy { row in Self.states.contains(row.from) && Self.events.contains(row.event) })
    }

    /// A transfer with a preparer: its files open off the loop, then its handle runs to the end.
    @Test func preparesThenRunsToTheEnd() {
        var transfer = L()
        #expect(transfer.handle(.admitted(preparing: true)) == .perform([.prepareFiles]))
        #expect(!transfer.isRunning && !transfer.countsIdleTime)
        #expect(transfer.handle(.prepared) == .perform([.launch]))
        #expect(transfer.isRunning && transfer.countsIdleTime)
        #expect(transfer.handle(.handleDone(writeRefused: false)) == .perform([.finish]))
        #expect(transfer.ending == .finished && transfer.ending?.started == true && transfer.stopReason == nil)
    }

    /// The pacer and a full direct output pause the same handle independently; only with both
    /// over does the idle timeout count again.
    @Test func pausesAreIndependentAndNotIdle() {
        var transfer = L()
        #expect(transfer.handle(.admitted(preparing: false)) == .perform([.launch]))
        #expect(transfer.handle(.paused(.pacer)) == .perform([]))
        #expect(transfer.handle(.paused(.directOutput)) == .perform([]))
        #expect(transfer.isPaused(by: .pacer) && transfer.isPaused(by: .directOutput) && !transfer.countsIdleTime)
        #expect(transfer.handle(.unpaused(.pacer)) == .perform([.unpause]))
        #expect(!transfer.countsIdleTime)
        #expect(transfer.handle(.unpaused(.directOutput)) == .perform([.unpause]))
        #expect(transfer.countsIdleTime)
        // A second tick for a pause already over resumes nothing.
        #expect(transfer.handle(.unpaused(.pacer)) == .perform([]))
    }

    /// A download waiting for the hasher to give a chunk back: a chunk that comes back after the
    /// attempt ended finds nothing to resume.
    @Test func aChunkBackAfterTheEndResumesNothing() {
        var transfer = L(.running(C(pausedBy: [.directOutput])))
        #expect(transfer.handle(.stop(.suspended)) == .perform([.finish]))
        #expect(transfer.handle(.unpaused(.directOutput)) == .perform([]))
        #expect(transfer.ending == .stopped(.suspended, started: true))
    }

    /// A redirect to restart: the hop ends as asked and the same handle starts again, in place,
    /// with nothing paused or pending — unless a stop came first.
    @Test func aRedirectRestartsTheHandleInPlace() {
        var transfer = L(.running(C(pausedBy: [.pacer])))
        #expect(transfer.handle(.redirect(Self.redirect)) == .perform([]))
        #expect(transfer.handle(.handleDone(writeRefused: true)) == .perform([.leavePacer, .restart(Self.redirect)]))
        #expect(transfer.current == .running(C()))
        #expect(transfer.handle(.handleDone(writeRefused: true)) == .perform([.finish]))
        #expect(transfer.ending == .finished)

        var stopped = L(.running(C(redirect: Self.redirect)))
        #expect(stopped.handle(.stop(.cancelled)) == .perform([.finish]))
        #expect(stopped.stopReason == .cancelled)
    }

    /// A cancel in each state: taken out of the queue, remembered until the files are back,
    /// finished at once, or nothing once ended.
    @Test func cancelInEachState() {
        var waiting = L()
        #expect(waiting.handle(.stop(.cancelled)) == .perform([.withdraw]))
        #expect(waiting.ending?.started == false && waiting.stopReason == .cancelled)

        var preparing = L(.preparing(stop: nil))
        #expect(preparing.handle(.stop(.cancelled)) == .perform([]))
        #expect(preparing.handle(.prepared) == .perform([.refuse]))
        #expect(preparing.ending == .stopped(.cancelled, started: false))

        var running = L(.running(C()))
        #expect(running.handle(.stop(.cancelled)) == .perform([.finish]))
        #expect(running.ending == .stopped(.cancelled, started: true))
        #expect(running.handle(.stop(.cancelled)) == .perform([]))
    }

    /// The lease's fence, found inside a callback, ends the handle when curl reports it done (a
    /// redirect pending is not followed); found as the output closes, the outcome reports it.
    @Test func aFenceEndsTheAttemptStopped() {
        var transfer = L(.running(C(redirect: Self.redirect)))
        #expect(transfer.handle(.fenced) == .perform([]))
        #expect(transfer.stopReason == .fenced)
        #expect(transfer.handle(.handleDone(writeRefused: true)) == .perform([.finish]))
        #expect(transfer.ending == .stopped(.fenced, started: true))

        var finished = L(.ended(.finished))
        #expect(finished.handle(.fenced) == .perform([]))
        #expect(finished.stopReason == .fenced && finished.ending?.started == true)
    }

    /// Idle only while nothing pauses it; a refused one never started.
    @Test func idleAndRefusedEndings() {
        var transfer = L(.running(C()))
        #expect(transfer.handle(.idleTimeout) == .perform([.finish]))
        #expect(transfer.ending == .idle && transfer.ending?.started == true)
        var refused = L()
        #expect(refused.handle(.refused(Self.failure)) == .perform([.refuse]))
        #expect(refused.ending == .refused(Self.failure) && refused.ending?.started == false)
    }
}
