import CCurl

/// Typed reads of `curl_easy_getinfo`.
enum CurlInfo {
    static func string(_ easy: OpaquePointer, _ info: CURLINFO) -> String? {
        var p: UnsafeMutablePointer<CChar>?
        guard transferd_easy_getinfo_string(UnsafeMutableRawPointer(easy), info, &p) == CURLE_OK, let p else { return nil }
        return String(cString: p)
    }

    static func long(_ easy: OpaquePointer, _ info: CURLINFO) -> Int {
        var v = 0
        _ = transferd_easy_getinfo_long(UnsafeMutableRawPointer(easy), info, &v)
        return v
    }

    static func offset(_ easy: OpaquePointer, _ info: CURLINFO) -> Int64 {
        var v: curl_off_t = 0
        _ = transferd_easy_getinfo_off(UnsafeMutableRawPointer(easy), info, &v)
        return Int64(v)
    }

    /// URLSessionTaskMetrics from curl's timing fields. curl's times are cumulative from the start
    /// of the request; each phase here is the step from the previous one, in milliseconds.
    static func metrics(_ easy: OpaquePointer) -> TransferMetrics {
        var m = TransferMetrics()
        m.redirectCount = long(easy, CURLINFO_REDIRECT_COUNT)
        if let ip = string(easy, CURLINFO_PRIMARY_IP), !ip.isEmpty {
            let port = long(easy, CURLINFO_PRIMARY_PORT)
            m.remoteAddress = ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
        }
        m.httpVersion = switch long(easy, CURLINFO_HTTP_VERSION) {
        case CURL_HTTP_VERSION_1_0: "http/1.0"
        case CURL_HTTP_VERSION_1_1: "http/1.1"
        case CURL_HTTP_VERSION_2_0: "h2"
        case CURL_HTTP_VERSION_3: "h3"
        default: nil
        }
        // No new connection was made for the last request: it rode on a kept-alive one.
        m.reusedConnection = long(easy, CURLINFO_NUM_CONNECTS) == 0
        let lookup = Double(offset(easy, CURLINFO_NAMELOOKUP_TIME_T)) / 1000
        let connect = Double(offset(easy, CURLINFO_CONNECT_TIME_T)) / 1000
        let tls = Double(offset(easy, CURLINFO_APPCONNECT_TIME_T)) / 1000
        let firstByte = Double(offset(easy, CURLINFO_STARTTRANSFER_TIME_T)) / 1000
        m.dnsMs = lookup
        m.connectMs = max(0, connect - lookup)
        m.tlsMs = tls > 0 ? max(0, tls - connect) : 0
        m.firstByteMs = firstByte
        m.totalMs = Double(offset(easy, CURLINFO_TOTAL_TIME_T)) / 1000
        return m
    }
}
