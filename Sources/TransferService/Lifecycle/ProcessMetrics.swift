import Glibc
import Prometheus
import TransferModel

/// Process gauges sampled when `/metrics` is scraped: resident memory, open descriptors, start time.
final class ProcessMetrics: Sendable {
    private let resident: Gauge
    private let openFDs: Gauge
    private let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))

    init(registry: PrometheusCollectorRegistry, startTime: Timestamp) {
        resident = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "process", metricName: "resident_memory", unitName: "bytes", helpText: "Resident set size in bytes."))
        openFDs = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "process", metricName: "open", unitName: "fds", helpText: "Open file descriptors."))
        registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "process", metricName: "start_time", unitName: "seconds",
            helpText: "Start time since the Unix epoch in seconds."))
            .set(startTime.seconds)
    }

    func collect() {
        if let statm = readSmallFile("/proc/self/statm") {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Double(fields[1]) { resident.set(pages * pageSize) }
        }
        if let dir = opendir("/proc/self/fd") {
            var count = 0
            while readdir(dir) != nil { count += 1 }
            closedir(dir)
            openFDs.set(Double(max(0, count - 3)))  // ".", ".." and the descriptor of the listing itself
        }
    }
}
