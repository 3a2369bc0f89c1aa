// Wires transferd together: parse the command line, resolve configuration, bootstrap logging and
// metrics, start the service, wait for SIGTERM/SIGINT (reloading the auth file on SIGHUP), shut
// down gracefully.
import ArgumentParser
import Dispatch
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

if command.checkConfig {
    do {
        try Service.checkConfiguration(configuration)
    } catch {
        FileHandleOutput.standardError("transferd: \(error)\n")
        exit(2)
    }
    print("transferd: configuration OK (listen \(configuration.listen), data directory \(configuration.dataDirectory))")
    exit(0)
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
MetricsSystem.bootstrap(DescribedMetricsFactory(base: metricsFactory))
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
    case .shutdownFinished, .timedOut:
        continue
    }
    break
}

// Shutting down. A second SIGTERM/SIGINT ends the process at once: what a 2xx acknowledged is
// already committed (synchronous SQLite commits), so nothing acknowledged is lost, only the
// orderly ending of what was still running.
let signalled = ContinuousClock.now
func secondsLeft(_ total: Double) -> Double {
    let elapsed = (ContinuousClock.now - signalled).components
    return max(0, total - Double(elapsed.seconds) - Double(elapsed.attoseconds) / 1e18)
}
func exitOnSecondSignal(_ signal: Int32) -> Never {
    logger.warning("second signal: exiting at once", metadata: ["signal": .stringConvertible(signal)])
    exit(1)
}
service.beginShutdown()
if configuration.shutdownGrace > 0 {
    logger.info("readiness is 503; serving on through the shutdown grace", metadata: ["grace_s": .stringConvertible(configuration.shutdownGrace)])
}
grace: while secondsLeft(configuration.shutdownGrace) > 0 {
    switch Service.waitForSignal(timeout: secondsLeft(configuration.shutdownGrace)) {
    case .terminate(let signal): exitOnSecondSignal(signal)
    case .reload: service.reloadAuthFile()
    case .timedOut: break grace
    case .shutdownFinished: continue
    }
}
DispatchQueue.global().async {
    service.shutdown()
    Service.shutdownFinished()
}
while true {
    switch Service.waitForSignal(timeout: secondsLeft(configuration.shutdownTimeout)) {
    case .shutdownFinished:
        exit(0)
    case .terminate(let signal):
        exitOnSecondSignal(signal)
    case .reload:
        continue
    case .timedOut:
        logger.error("the shutdown did not finish within --shutdown-timeout; exiting",
                     metadata: ["timeout_s": .stringConvertible(configuration.shutdownTimeout)])
        exit(1)
    }
}
