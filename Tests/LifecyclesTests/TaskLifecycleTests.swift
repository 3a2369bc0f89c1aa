import Testing
@testable import Lifecycles
import TransferVocabulary

/// Every state of the task machine against every event: the rows below list what each pair does;
/// a pair not listed must be refused as invalid, leaving the value as it was.
struct TaskLifecycleTests {
    typealias S = TaskLifecycle.State
    typealias E = TaskLifecycle.Event
    typealias A = TaskLifecycle.Action

    static let cancelling: TaskLifecycle.Intent = .cancel(resumeData: false, shown: .canceling)

    static let states: [S] = [
        .new,
        .restored(.suspended, .waiting, retryDueIn: nil),
        .restored(.running, .transferring, retryDueIn: nil),
        .restored(.running, .retrying, retryDueIn: 30),
        .restored(.canceling, .waiting, retryDueIn: nil),
        .suspended, .waiting, .scheduled, .retrying,
        .starting(.run), .starting(.suspend), .starting(.resume), .starting(.cancel(resumeData: true, shown: .running)),
        .transferring(.waiting, .run), .transferring(.connecting, .run), .transferring(.transferring, .run),
        .transferring(.transferring, .suspend), .transferring(.transferring, .resume), .transferring(.transferring, cancelling),
        .releasing(.waiting, .run), .releasing(.retrying(after: 30), .run), .releasing(.waiting, .suspend),
        .releasing(.waiting, .resume), .releasing(.retrying(after: 30), .resume),
        .releasing(.waiting, .cancel(resumeData: true, shown: .suspended)),
        .completing(shown: .running), .completed, .deleted,
    ]

    static let events: [E] = [
        .created(start: true), .created(start: false),
        .processRestarted(mode: .background), .processRestarted(mode: .default), .processRestarted(mode: .ephemeral),
        .processRestarted(mode: .background, retriesSentRequest: false),
        .processStopping,
        .resume, .suspend, .cancel(produceResumeData: false), .cancel(produceResumeData: true),
        .startDue, .beginLater(after: 60), .startFailed(.timedOut), .startPrepared,
        .transferStarted, .responseHead, .progress,
        .transferStopped(.suspended), .transferStopped(.shutdown), .transferStopped(.cancelled),
        .transferFinished,
        .transferFailed(.networkConnectionLost, .retry(after: 30)),
        .transferFailed(.networkConnectionLost, .stop(resumable: true)),
        .transferFailed(.cannotWriteToFile, .stop(resumable: false)),
        .transferFailed(.networkConnectionLost, .deadline),
        .outputReleased, .completionStored, .deleted,
    ]

    struct Row {
        let from: S
        let event: E
        let to: S
        let actions: [A]
        /// Attempts after the event (every state starts at 0).
        let attempts: Int
    }

    /// Completion rows: `partial` (if any) then `complete`.
    static func completes(_ code: TaskErrorCode?, shown: TaskState, _ partial: A? = nil) -> (S, [A]) {
        (.completing(shown: shown), (partial.map { [$0] } ?? []) + [.complete(code)])
    }

    /// The same requests on a running task whose output is free: scheduled, retrying, waiting.
    static func runningIdle(_ from: S, startDue: (S, [A])) -> [Row] {
        rows(from, [
            (.resume, from, []),
            (.suspend, .suspended, [.writeRecord(event: .suspended)]),
            r(.cancel(produceResumeData: false), completes(.cancelled, shown: .running, .discardPartial)),
            r(.cancel(produceResumeData: true), completes(.cancelled, shown: .running, .keepPartialForResume)),
            r(.startDue, startDue),
        ])
    }

    /// What ends an attempt, for a transfer whose task shows `shown` and asked for nothing else.
    static func attemptEnds(shown: TaskState, retry: (S, [A])) -> [(E, S, [A])] {
        [
            r(.transferFinished, completes(nil, shown: shown)),
            r(.transferFailed(.networkConnectionLost, .retry(after: 30)), retry),
            r(.transferFailed(.networkConnectionLost, .stop(resumable: true)),
              completes(.networkConnectionLost, shown: shown, .keepPartialForResume)),
            r(.transferFailed(.cannotWriteToFile, .stop(resumable: false)),
              completes(.cannotWriteToFile, shown: shown, .discardPartial)),
            r(.transferFailed(.networkConnectionLost, .deadline), completes(.timedOut, shown: shown, .keepPartialForResume)),
        ]
    }

    /// A row whose outcome is given as one pair (state, actions).
    static func r(_ event: E, _ outcome: (S, [A])) -> (E, S, [A]) {
        (event, outcome.0, outcome.1)
    }

    static func rows(_ from: S, _ list: [(E, S, [A])]) -> [Row] {
        list.map { Row(from: from, event: $0.0, to: $0.1, actions: $0.2, attempts: $0.1 == .transferring(.connecting, .run) && $0.0 == .transferStarted ? 1 : 0) }
    }

    static let table: [Row] = {
        var t: [Row] = []
        t += rows(.new, [
            (.created(start: true), .starting(.run), [.startTransfer]),
            (.created(start: false), .suspended, []),
        ])
        let restarts: [(S, background: (S, [A]), default: (S, [A]))] = [
            (.restored(.suspended, .waiting, retryDueIn: nil), (.suspended, []),
             completes(.interrupted, shown: .suspended, .keepPartialForResume)),
            (.restored(.running, .transferring, retryDueIn: nil), (.starting(.run), [.startTransfer]),
             completes(.interrupted, shown: .running, .keepPartialForResume)),
            (.restored(.running, .retrying, retryDueIn: 30), (.retrying, [.scheduleStart(after: 30, phase: .retrying)]),
             completes(.interrupted, shown: .running, .keepPartialForResume)),
            (.restored(.canceling, .waiting, retryDueIn: nil), completes(.cancelled, shown: .canceling, .discardPartial),
             completes(.cancelled, shown: .canceling, .discardPartial)),
        ]
        for (from, background, otherwise) in restarts {
            let ephemeral: (S, [A]) = from == .restored(.canceling, .waiting, retryDueIn: nil)
                ? otherwise : (.deleted, [.discardPartial])
            // A request that may have reached the origin, with a method the session does not
            // send twice, is not run again: only the one caught mid-transfer ends.
            let notSentTwice: (S, [A]) = from == .restored(.running, .transferring, retryDueIn: nil)
                ? completes(.interrupted, shown: .running, .discardPartial) : background
            t += rows(from, [
                r(.processRestarted(mode: .background), background),
                r(.processRestarted(mode: .background, retriesSentRequest: false), notSentTwice),
                r(.processRestarted(mode: .default), otherwise),
                r(.processRestarted(mode: .ephemeral), ephemeral),
            ])
        }
        t += rows(.suspended, [
            (.resume, .starting(.run), [.writeRecord(event: .resumed), .startTransfer]),
            (.suspend, .suspended, []),
            (.startDue, .suspended, []),
        ])
        t += rows(.suspended, [
            r(.cancel(produceResumeData: false), completes(.cancelled, shown: .suspended, .discardPartial)),
            r(.cancel(produceResumeData: true), completes(.cancelled, shown: .suspended, .keepPartialForResume)),
            // A default session's task at rest when the process stops.
            r(.processStopping, completes(.interrupted, shown: .suspended, .keepPartialForResume)),
        ])
        for atRest in [S.waiting, .scheduled, .retrying] {
            t += rows(atRest, [r(.processStopping, completes(.interrupted, shown: .running, .keepPartialForResume))])
        }
        t += runningIdle(.waiting, startDue: (.waiting, []))
        t += runningIdle(.scheduled, startDue: (.starting(.run), [.startTransfer]))
        t += runningIdle(.retrying, startDue: (.starting(.run), [.startTransfer]))

        // Starting: requests are remembered for when the start reports.
        for (intent, shown) in [(TaskLifecycle.Intent.run, TaskState.running), (.resume, .running)] {
            t += rows(.starting(intent), [
                (.resume, .starting(intent), []),
                (.suspend, .starting(.suspend), [.writeRecord(event: .suspended)]),
                (.cancel(produceResumeData: false), .starting(.cancel(resumeData: false, shown: shown)), []),
                (.cancel(produceResumeData: true), .starting(.cancel(resumeData: true, shown: shown)), []),
                (.startDue, .starting(intent), []),
                (.beginLater(after: 60), .scheduled, [.scheduleStart(after: 60, phase: .scheduled)]),
                (.startPrepared, .transferring(.waiting, .run), [.submitTransfer]),
            ])
            t += rows(.starting(intent), [r(.startFailed(.timedOut), completes(.timedOut, shown: .running))])
        }
        t += rows(.starting(.suspend), [
            (.resume, .starting(.resume), [.writeRecord(event: .resumed)]),
            (.suspend, .starting(.suspend), []),
            (.cancel(produceResumeData: false), .starting(.cancel(resumeData: false, shown: .suspended)), []),
            (.cancel(produceResumeData: true), .starting(.cancel(resumeData: true, shown: .suspended)), []),
            (.startDue, .starting(.suspend), []),
            (.beginLater(after: 60), .suspended, []),
            (.startPrepared, .suspended, [.keepPartial]),
        ])
        t += rows(.starting(.suspend), [r(.startFailed(.timedOut), completes(.timedOut, shown: .suspended))])
        let startingCancel = S.starting(.cancel(resumeData: true, shown: .running))
        t += rows(startingCancel, [E.resume, .suspend, .cancel(produceResumeData: false), .cancel(produceResumeData: true), .startDue]
            .map { ($0, startingCancel, []) })
        t += rows(startingCancel, [
            r(.beginLater(after: 60), completes(.cancelled, shown: .running, .keepPartialForResume)),
            r(.startFailed(.timedOut), completes(.timedOut, shown: .running)),
            r(.startPrepared, completes(.cancelled, shown: .running, .keepPartialForResume)),
        ])

        // Transferring, asked for nothing else.
        for phase in [TaskPhase.waiting, .connecting, .transferring] {
            let from = S.transferring(phase, .run)
            t += rows(from, [
                (.resume, from, []),
                (.suspend, .transferring(phase, .suspend), [.writeRecord(event: .suspended), .stopTransfer(.suspended)]),
                (.cancel(produceResumeData: false), .transferring(phase, .cancel(resumeData: false, shown: .canceling)),
                 [.stopTransfer(.cancelled)]),
                (.cancel(produceResumeData: true), .transferring(phase, .cancel(resumeData: true, shown: .canceling)),
                 [.stopTransfer(.cancelled)]),
                (.startDue, from, []),
                (.transferStopped(.shutdown), .releasing(.waiting, .run), [.releaseOutput]),
            ])
            t += rows(from, attemptEnds(shown: .running, retry: (.releasing(.retrying(after: 30), .run), [.releaseOutput])))
            if phase == .waiting {
                t += rows(from, [(.transferStarted, .transferring(.connecting, .run), [])])
            } else {
                t += rows(from, [
                    (.responseHead, .transferring(.transferring, .run), []),
                    (.progress, .transferring(.transferring, .run), []),
                ])
            }
        }
        // Transferring while a suspend stops it, and after a resume came too.
        let stopping = S.transferring(.transferring, .suspend)
        t += rows(stopping, [
            (.resume, .transferring(.transferring, .resume), [.writeRecord(event: .resumed)]),
            (.suspend, stopping, []),
            (.cancel(produceResumeData: false), .transferring(.transferring, cancelling), [.stopTransfer(.cancelled)]),
            (.cancel(produceResumeData: true), .transferring(.transferring, .cancel(resumeData: true, shown: .canceling)),
             [.stopTransfer(.cancelled)]),
            (.startDue, stopping, []), (.responseHead, stopping, []), (.progress, stopping, []),
            (.transferStopped(.suspended), .releasing(.waiting, .suspend), [.releaseOutput]),
            (.transferStopped(.shutdown), .releasing(.waiting, .suspend), [.releaseOutput]),
        ])
        t += rows(stopping, attemptEnds(shown: .suspended, retry: (.releasing(.retrying(after: 30), .suspend), [.releaseOutput])))
        let restarting = S.transferring(.transferring, .resume)
        t += rows(restarting, [
            (.resume, restarting, []),
            (.suspend, stopping, [.writeRecord(event: .suspended)]),
            (.cancel(produceResumeData: false), .transferring(.transferring, cancelling), [.stopTransfer(.cancelled)]),
            (.cancel(produceResumeData: true), .transferring(.transferring, .cancel(resumeData: true, shown: .canceling)),
             [.stopTransfer(.cancelled)]),
            (.startDue, restarting, []), (.responseHead, restarting, []), (.progress, restarting, []),
            (.transferStopped(.suspended), .releasing(.waiting, .resume), [.releaseOutput]),
            (.transferStopped(.shutdown), .releasing(.waiting, .resume), [.releaseOutput]),
        ])
        t += rows(restarting, attemptEnds(shown: .running, retry: (.releasing(.retrying(after: 30), .run), [.releaseOutput])))
        // Transferring while a cancel stops it: however the attempt ends, a retry is not made.
        let canceling = S.transferring(.transferring, cancelling)
        t += rows(canceling, [E.resume, .suspend, .cancel(produceResumeData: false), .cancel(produceResumeData: true),
                              .startDue, .responseHead, .progress].map { ($0, canceling, []) })
        t += rows(canceling, [E.transferStopped(.suspended), .transferStopped(.shutdown), .transferStopped(.cancelled)]
            .map { r($0, completes(.cancelled, shown: .canceling, .discardPartial)) })
        t += rows(canceling, attemptEnds(shown: .canceling,
                                         retry: completes(.cancelled, shown: .canceling, .discardPartial)))

        // Releasing an ended attempt's output.
        for next in [TaskLifecycle.Next.waiting, .retrying(after: 30)] {
            let running = S.releasing(next, .run), resumed = S.releasing(next, .resume)
            let runOn: (S, [A]) = next == .waiting
                ? (.waiting, [.writeRecord(event: nil)])
                : (.retrying, [.writeRecord(event: nil), .scheduleStart(after: 30, phase: .retrying)])
            let resumeOn: (S, [A]) = next == .waiting ? (.starting(.run), [.writeRecord(event: nil), .startTransfer]) : runOn
            for (from, released) in [(running, runOn), (resumed, resumeOn)] {
                t += rows(from, [
                    (.resume, from, []),
                    (.suspend, .releasing(next, .suspend), [.writeRecord(event: .suspended)]),
                    (.cancel(produceResumeData: false), .releasing(next, .cancel(resumeData: false, shown: .running)), []),
                    (.cancel(produceResumeData: true), .releasing(next, .cancel(resumeData: true, shown: .running)), []),
                    (.startDue, from, []),
                    (.outputReleased, released.0, released.1),
                ])
            }
        }
        let releasingSuspended = S.releasing(.waiting, .suspend)
        t += rows(releasingSuspended, [
            (.resume, .releasing(.waiting, .resume), [.writeRecord(event: .resumed)]),
            (.suspend, releasingSuspended, []),
            (.cancel(produceResumeData: false), .releasing(.waiting, .cancel(resumeData: false, shown: .suspended)), []),
            (.cancel(produceResumeData: true), .releasing(.waiting, .cancel(resumeData: true, shown: .suspended)), []),
            (.startDue, releasingSuspended, []),
            (.outputReleased, .suspended, [.writeRecord(event: nil)]),
        ])
        let releasingCancelled = S.releasing(.waiting, .cancel(resumeData: true, shown: .suspended))
        t += rows(releasingCancelled, [E.resume, .suspend, .cancel(produceResumeData: false), .cancel(produceResumeData: true), .startDue]
            .map { ($0, releasingCancelled, []) })
        t += rows(releasingCancelled, [r(.outputReleased, completes(.cancelled, shown: .suspended, .keepPartialForResume))])

        // Completing, completed, forgotten.
        let requests: [E] = [.resume, .suspend, .cancel(produceResumeData: false), .cancel(produceResumeData: true), .startDue]
        t += rows(.completing(shown: .running), requests.map { ($0, .completing(shown: .running), []) })
        t += rows(.completing(shown: .running), [(.completionStored, .completed, [.notifyWaiters])])
        t += rows(.completed, requests.map { ($0, .completed, []) })
        t += rows(.completed, [(.deleted, .deleted, [])])
        t += rows(.deleted, [(.startDue, .deleted, [])])
        return t
    }()

    @Test func everyStateAgainstEveryEvent() {
        let table = TransitionTable<TaskLifecycle, S>(
            states: Self.states.map { ($0, TaskLifecycle($0)) }, events: Self.events,
            rows: Self.table.map { row in
                .init(from: row.from, event: row.event, actions: row.actions) { $0.current == row.to && $0.attempts == row.attempts }
            })
        #expect(table.checkEveryPair() == Self.states.count * Self.events.count)
        // Every listed row is one of the pairs enumerated (none names a state or event left out).
        #expect(Self.table.allSatisfy { row in Self.states.contains(row.from) && Self.events.contains(row.event) })
    }

    @Test func showsURLSessionStatesAndPhases() {
        let shown: [(S, TaskState, TaskPhase)] = [
            (.new, .suspended, .waiting),
            (.restored(.running, .retrying, retryDueIn: 30), .running, .retrying),
            (.suspended, .suspended, .waiting), (.waiting, .running, .waiting),
            (.scheduled, .running, .scheduled), (.retrying, .running, .retrying),
            (.starting(.run), .running, .waiting), (.starting(.suspend), .suspended, .waiting),
            (.starting(.cancel(resumeData: false, shown: .suspended)), .suspended, .waiting),
            (.transferring(.connecting, .run), .running, .connecting),
            (.transferring(.transferring, .resume), .running, .transferring),
            (.transferring(.transferring, .suspend), .suspended, .waiting),
            (.transferring(.transferring, Self.cancelling), .canceling, .waiting),
            (.releasing(.retrying(after: 30), .run), .running, .waiting),
            (.completing(shown: .canceling), .canceling, .waiting),
            (.completed, .completed, .finished), (.deleted, .completed, .finished),
        ]
        for (state, taskState, phase) in shown {
            let machine = TaskLifecycle(state)
            #expect(machine.state == taskState, "\(state)")
            #expect(machine.phase == phase, "\(state)")
        }
    }

    @Test func onlyTasksNothingHoldsAreAtRest() {
        let atRest = Self.states.filter { TaskLifecycle($0).isAtRest }
        #expect(atRest == [.suspended, .waiting, .scheduled, .retrying])
    }

    @Test func restoringACompletedTaskLeavesItCompleted() {
        #expect(TaskLifecycle(restoring: .completed, phase: .finished, attempts: 2) == TaskLifecycle(.completed, attempts: 2))
        #expect(TaskLifecycle(restoring: .running, phase: .retrying, attempts: 3, retryDueIn: 9).current
            == .restored(.running, .retrying, retryDueIn: 9))
    }

    /// A suspend, then a resume, while a transfer stops: the next attempt starts once the first
    /// one's file is let go, never before.
    @Test func resumeWhileSuspendingStartsAgainAfterTheFileIsLetGo() {
        var task = TaskLifecycle()
        #expect(task.handle(.created(start: true)) == .perform([.startTransfer]))
        #expect(task.handle(.startPrepared) == .perform([.submitTransfer]))
        #expect(task.handle(.transferStarted) == .perform([]))
        #expect(task.handle(.suspend) == .perform([.writeRecord(event: .suspended), .stopTransfer(.suspended)]))
        #expect(task.handle(.resume) == .perform([.writeRecord(event: .resumed)]))
        #expect(task.state == .running)
        #expect(task.handle(.transferStopped(.suspended)) == .perform([.releaseOutput]))
        #expect(task.handle(.outputReleased) == .perform([.writeRecord(event: nil), .startTransfer]))
        #expect(task.handle(.startPrepared) == .perform([.submitTransfer]))
        #expect(task.handle(.transferStarted) == .perform([]))
        #expect(task.attempts == 2)
    }

    /// A cancel while an ended attempt's output is settled is carried out once it is let go; the
    /// first cancel's wish for resume data stands.
    @Test func cancelWhileTheOutputIsBusyCompletesWhenItIsLetGo() {
        var task = TaskLifecycle(.transferring(.transferring, .run))
        #expect(task.handle(.transferFailed(.networkConnectionLost, .retry(after: 5))) == .perform([.releaseOutput]))
        #expect(task.handle(.cancel(produceResumeData: true)) == .perform([]))
        #expect(task.handle(.cancel(produceResumeData: false)) == .perform([]))
        #expect(task.cancelRequested)
        #expect(task.handle(.outputReleased) == .perform([.keepPartialForResume, .complete(.cancelled)]))
        #expect(task.isCompleting)
        #expect(task.handle(.completionStored) == .perform([.notifyWaiters]))
        #expect(task.state == .completed)
        #expect(task.handle(.deleted) == .perform([]))
        #expect(task.isDeleted)
    }
}
