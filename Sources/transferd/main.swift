// Wires transferd together: parse the command line, resolve configuration, bootstrap logging and
// metrics, start the service, wait for SIGTERM/SIGINT (reloading the auth file on SIGHUP), shut
// down gracefully.
import ArgumentParser
import Glibc
import Logging
import Metrics
import Prometheus
import TransferService

// Before any thread exists, so every thread inherits the mask and only sigwait sees the signals.
Service.blockSignals()

let command: TransferdCommand
do {
    command = try TransferdCommand.parse()
} catch {
    TransferdCommand.exit(withError: error)
}

let configuration: ServiceConfiguration
do {
    configuration = try ConfigurationResolver.resolve(command.rawSettings, environment: ProcessEnvironment.current())
} catch {
    FileHandleOutput.standardError("transferd: \(error)\n")
    exit(2)
}

let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: level) }
let registry = PrometheusCollectorRegistry()
var metricsFactory = PrometheusMetricsFactory(registry: registry)
// API calls take tens of microseconds to milliseconds; the default buckets start at 5 ms.
metricsFactory.defaultDurationHistogramBuckets = [
    .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2500) / 1000,
    .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
    .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
]
MetricsSystem.bootstrap(metricsFactory)
let logger = Logger(label: "transferd")

let service: Service
do {
    service = try Service(configuration: configuration, logger: logger, metrics: registry)
} catch let error as ConfigurationError {
    // A bad value found only once it is used (a policy, a root, the auth file): as bad flags are.
    logger.critical("cannot start", metadata: ["error": .string(error.description)])
    FileHandleOutput.standardError("transferd: \(error)\n")
    exit(2)
} catch {
    logger.critical("cannot start", metadata: ["error": .string("\(error)")])
    exit(1)
}

while true {
    switch Service.waitForSignal() {
    case .reload:
        service.reloadAuthFile()
        continue
    case .terminate(let signal):
        logger.info("signal received", metadata: ["signal": .stringConvertible(signal)])
    }
    break
}
service.shutdown()
exit(0)
