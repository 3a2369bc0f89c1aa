import HTTPServer

/// Cluster mode's settings (`--database` given): who this replica is to the others.
public struct ClusterSettings: Sendable, Equatable {
    /// `host:port` (a name or an address) where the other replicas reach this one's API.
    public var advertiseAddress: String
    /// Seconds a dead replica's sessions wait before another takes them over.
    public var leaseTimeout: Double = 15

    /// The advertised address a replica uses: the one given, else the listen address when other
    /// machines can reach it as it is (neither a wildcard nor port 0). nil: it must be given.
    static func advertised(_ given: String?, listen: SocketAddress) -> String? {
        if let given { return given }
        guard listen.port != 0, listen.host != "0.0.0.0", listen.host != "::" else { return nil }
        return listen.description
    }

    /// Why `text` is no `host:port` another replica can connect to; nil when it is one.
    static func problem(withAddress text: String) -> String? {
        let host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return "expected host:port or [IPv6]:port"
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return "expected host:port or [IPv6]:port" }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" || $0 == "@" }) else { return "the host is missing or not a host" }
        guard let number = UInt16(port), number != 0 else { return "the port must be 1 to 65535" }
        guard !["0.0.0.0", "::"].contains(host) else { return "a wildcard address cannot be connected to" }
        return nil
    }
}
