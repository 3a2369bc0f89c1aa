import HTTPServer
import JSON
import Prometheus
import TransferCore

/// `/healthz`, `/readyz` and `/metrics`: for probes and scrapers, never behind a token.
package struct OperationsRoutes {
    let readiness: Readiness
    let metrics: PrometheusCollectorRegistry
    /// Sets the gauges read at scrape time, before the registry is written out.
    let collect: @Sendable () -> Void

    package init(readiness: Readiness, metrics: PrometheusCollectorRegistry, collect: @escaping @Sendable () -> Void) {
        self.readiness = readiness
        self.metrics = metrics
        self.collect = collect
    }

    package func register(in table: inout RouteTable) {
        table.add("GET", "/healthz") { _, responder in
            responder.respond(.json(Array(#"{"status":"ok"}"#.utf8)))
        }
        table.add("GET", "/readyz") { [readiness] _, responder in
            readiness.evaluate { results in
                let ready = !readiness.isStopping && results.allSatisfy(\.ok)
                var json = JSONWriter()
                json.beginObject()
                json.key("status"); json.string(ready ? "ready" : (readiness.isStopping ? "stopping" : "not_ready"))
                json.key("checks"); json.beginObject()
                for result in results {
                    json.key(escaping: result.name); json.string(result.ok ? "ok" : "failing")
                }
                json.endObject()
                json.endObject()
                responder.respond(.json(json.bytes, status: ready ? 200 : 503))
            }
        }
        table.add("GET", "/metrics") { [metrics, collect] _, responder in
            collect()
            var text: [UInt8] = []
            metrics.emit(into: &text)
            responder.respond(HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]), body: .bytes(text)))
        }
    }
}
