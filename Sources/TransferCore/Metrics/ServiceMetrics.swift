import Lifecycles
import Prometheus
import Reactor
import TransferEngine
import TransferModel

/// transferd's own metric families on `/metrics`, besides the HTTP server's and the process's.
/// What happens once per task or per webhook attempt is counted as it happens (a lock-free
/// counter, a histogram); bytes are counted by each transfer into a `ByteTally`; what is a level
/// (tasks by state, events pending, sessions, handles, free space) is read at scrape time from
/// what is in memory (`TaskCoordinator.collectMetrics`).
package final class ServiceMetrics: Sendable {
    package let registry: PrometheusCollectorRegistry
    /// The principal a session's work counts for; nil without tenants, and then no family carries
    /// a `principal` label.
    private let principalOf: (@Sendable (String) -> String)?
    private let transferDuration: ValueHistogram
    private let webhookLatency: ValueHistogram
    private let commitTime: ValueHistogram
    /// Bytes by principal ("" without tenants), and how much of them the counters already show.
    private let tallies = Locked<[String: Tally]>([:])
    /// The counters, kept at hand: the registry validates names and labels at each look-up.
    private let completions = Locked<[CompletionKey: Counter]>([:])
    private let deliveries: [DeliveryOutcome: Counter]

    private struct CompletionKey: Hashable {
        let kind: TaskKind
        let outcome: Outcome
        let principal: String?
    }

    private struct Tally {
        let bytes = ByteTally()
        var shown: (received: Int64, sent: Int64) = (0, 0)
    }

    /// How a task ended: `success` (no error), `cancelled` (a client asked), `failed` (any other error).
    package enum Outcome: String, CaseIterable {
        case success, failed, cancelled
    }

    /// What an attempt to deliver a webhook came to: `success` (2xx), `gone` (410, which disables
    /// the delegate) or `failed` (any other status, or no response).
    package enum DeliveryOutcome: String, CaseIterable {
        case success, gone, failed
    }

    package init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
                 principalOf: (@Sendable (String) -> String)? = nil)
    {
        self.registry = registry
        self.principalOf = principalOf
        // From a small file over loopback (milliseconds) to large ones over slow links (hours).
        transferDuration = registry.makeValueHistogram(
            descriptor: ServiceMetrics.name("transferd_transfer_duration_seconds",
                                            "Time from a task's first start to its completion, per completed task that ran."),
            buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400])
        webhookLatency = registry.makeValueHistogram(
            descriptor: ServiceMetrics.name("transferd_webhook_latency_seconds",
                                            "Time from a task's completion to the 2xx of the webhook that reported it."),
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 86400])
        commitTime = registry.makeValueHistogram(
            descriptor: ServiceMetrics.name("transferd_store_commit_seconds",
                                            "Time of one group commit of the store, BEGIN to COMMIT (its fsync included)."),
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
        // Every labelled series exists from the start, at zero, so rates and alerts see it begin.
        deliveries = Dictionary(uniqueKeysWithValues: DeliveryOutcome.allCases.map { outcome in
            (outcome, registry.makeCounter(
                descriptor: ServiceMetrics.name("transferd_webhook_deliveries_total", "Webhook delivery attempts, by outcome."),
                labels: [("outcome", outcome.rawValue)]))
        })
        if principalOf == nil {
            for kind in TaskKind.allCases {
                for outcome in Outcome.allCases { _ = tasksCompleted(CompletionKey(kind: kind, outcome: outcome, principal: nil)) }
            }
            syncBytes()
        }
    }

    static func name(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    private func tasksCompleted(_ key: CompletionKey) -> Counter {
        completions.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(
                descriptor: ServiceMetrics.name("transferd_tasks_completed_total", "Tasks completed, by kind and outcome."),
                labels: [("kind", key.kind.rawValue), ("outcome", key.outcome.rawValue)]
                    + (key.principal.map { [("principal", $0)] } ?? []))
            counters[key] = counter
            return counter
        }
    }

    /// A task completed: counted by kind and outcome, and its time observed when it ran.
    func taskCompleted(_ record: TaskRecord, session: String) {
        let outcome: Outcome = switch record.error?.code {
        case nil: .success
        case .cancelled?: .cancelled
        default: .failed
        }
        tasksCompleted(CompletionKey(kind: record.kind, outcome: outcome, principal: principalOf?(session))).increment()
        if let started = record.startedAt, let ended = record.completedAt {
            transferDuration.record(max(0, ended.seconds - started.seconds))
        }
    }

    /// An attempt to deliver `event` ended with `status` (nil: no response).
    func webhookAttempt(_ event: Event, status: Int?) {
        let outcome: DeliveryOutcome = switch status {
        case (200..<300)?: .success
        case 410?: .gone
        default: .failed
        }
        deliveries[outcome]?.increment()
        // A completion's event bears the moment the task completed.
        if outcome == .success, event.type == .taskCompleted {
            webhookLatency.record(max(0, Timestamp.now().seconds - event.at.seconds))
        }
    }

    /// A group commit took `nanoseconds`.
    package func commitTook(nanoseconds: UInt64) {
        commitTime.record(Double(nanoseconds) / 1e9)
    }

    /// Where a transfer of the session counts its bytes: its principal's tally (one for all
    /// without tenants). Asked once per transfer attempt.
    func tally(forSession identifier: String) -> ByteTally {
        let principal = principalOf?(identifier) ?? ""
        return tallies.withLock { tallies in
            if let tally = tallies[principal] { return tally.bytes }
            let tally = Tally()
            tallies[principal] = tally
            return tally.bytes
        }
    }

    /// Brings the byte counters up to the tallies (at scrape time): a counter only grows, so each
    /// gets what its tally gained since the last scrape.
    func syncBytes() {
        tallies.withLock { tallies in
            if tallies.isEmpty && principalOf == nil { tallies[""] = Tally() }
            for (principal, tally) in tallies {
                let now = tally.bytes.totals
                let labels = principalOf == nil ? [] : [("principal", principal)]
                bytesCounter("received", labels).increment(by: now.received - tally.shown.received)
                bytesCounter("sent", labels).increment(by: now.sent - tally.shown.sent)
                tallies[principal]?.shown = now
            }
        }
    }

    private func bytesCounter(_ direction: String, _ labels: [(String, String)]) -> Counter {
        registry.makeCounter(
            descriptor: ServiceMetrics.name("transferd_transfer_bytes_total",
                                            "Body bytes tasks moved: response bodies received, request bodies sent."),
            labels: [("direction", direction)] + labels)
    }
}
