/// The version transferd reports (`GET /v1`, `--version`) and sends as its User-Agent.
package enum TransferdVersion {
    package static let current = "0.1.0"
}
