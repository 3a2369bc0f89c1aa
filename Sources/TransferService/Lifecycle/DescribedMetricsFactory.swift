import CoreMetrics
import Prometheus

/// The swift-metrics factory the HTTP server's metrics are made by: Prometheus's, with a `# HELP`
/// line for each family it knows a description of (swift-metrics has no help text, and
/// `promtool check metrics` asks for one).
public struct DescribedMetricsFactory: MetricsFactory {
    private let base: PrometheusMetricsFactory
    private let registry: PrometheusCollectorRegistry

    /// The families the HTTP server makes, described.
    static let descriptions = [
        "http_requests_total": "HTTP requests answered, by route, method and status.",
        "http_request_duration_seconds": "Time from a request's arrival to its response being written, by route.",
        "http_open_connections": "Client connections open now.",
    ]

    public init(base: PrometheusMetricsFactory) {
        self.base = base
        registry = base.registry
    }

    private static func descriptor(_ label: String) -> MetricNameDescriptor? {
        descriptions[label].map { MetricNameDescriptor(metricName: label, unitName: "", helpText: $0) }
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let descriptor = Self.descriptor(label) else { return base.makeCounter(label: label, dimensions: dimensions) }
        return registry.makeCounter(descriptor: descriptor, labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        base.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard !aggregate, let descriptor = Self.descriptor(label) else {
            return base.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
        }
        return registry.makeGauge(descriptor: descriptor, labels: dimensions)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        base.makeMeter(label: label, dimensions: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let descriptor = Self.descriptor(label) else { return base.makeTimer(label: label, dimensions: dimensions) }
        return registry.makeDurationHistogram(descriptor: descriptor, labels: dimensions,
                                              buckets: base.durationHistogramBuckets[label] ?? base.defaultDurationHistogramBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { base.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}
