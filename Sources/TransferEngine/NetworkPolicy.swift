import Glibc

/// Which addresses transfers may connect to, checked on the address actually connected to (so DNS
/// rebinding and redirects are covered).
public struct NetworkPolicy: Sendable {
    public let allow: [CIDR]
    public let deny: [CIDR]

    /// Refused by every policy: link-local (cloud metadata lives at 169.254.169.254) and unspecified.
    static let alwaysDenied: [CIDR] = ["169.254.0.0/16", "fe80::/10", "0.0.0.0/8", "::/128"].map { CIDR($0)! }
    /// Also refused by `public-only`: loopback, RFC 1918, CGNAT, unique local, multicast and friends.
    static let nonPublic: [CIDR] = [
        "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "192.0.0.0/24",
        "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "::1/128", "fc00::/7", "ff00::/8",
    ].map { CIDR($0)! }

    public init(allow: [CIDR] = [], deny: [CIDR] = []) {
        self.allow = allow
        self.deny = deny
    }

    /// `default`, `public-only`, or `allow=CIDR,…;deny=CIDR,…` (either part optional): explicit
    /// allows are checked first and may open what the defaults refuse, e.g. `allow=169.254.169.254/32`.
    public init?(parsing text: String) {
        switch text {
        case "default": self.init(deny: NetworkPolicy.alwaysDenied)
        case "public-only": self.init(deny: NetworkPolicy.alwaysDenied + NetworkPolicy.nonPublic)
        default:
            var allow: [CIDR] = [], deny: [CIDR] = NetworkPolicy.alwaysDenied
            for clause in text.split(separator: ";") {
                let kv = clause.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { return nil }
                let ranges = kv[1].split(separator: ",").map { CIDR(String($0).trimmed()) }
                guard !ranges.isEmpty, ranges.allSatisfy({ $0 != nil }) else { return nil }
                switch String(kv[0]).trimmed() {
                case "allow": allow += ranges.map { $0! }
                case "deny": deny += ranges.map { $0! }
                default: return nil
                }
            }
            self.init(allow: allow, deny: deny)
        }
    }

    /// Whether connecting to `address` (16 bytes, IPv4 as IPv4-mapped IPv6) is allowed.
    public func permits(_ address: IPAddress) -> Bool {
        if allow.contains(where: { $0.contains(address) }) { return true }
        return !deny.contains(where: { $0.contains(address) })
    }
}

/// An IP address in 16-byte form; IPv4 addresses are stored IPv4-mapped (`::ffff:a.b.c.d`), so one
/// comparison covers a v4 address and its mapped v6 spelling.
public struct IPAddress: Sendable, Equatable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(ipv4: v4)
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        self.init(ipv6: v6)
    }

    public init(ipv4: in_addr) {
        let b = withUnsafeBytes(of: ipv4.s_addr) { Array($0) }
        bytes = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + b
    }

    public init(ipv6: in6_addr) {
        bytes = withUnsafeBytes(of: ipv6) { Array($0) }
    }

    public var isIPv4Mapped: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    public var description: String {
        if isIPv4Mapped { return bytes[12...].map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }
}

/// An address range, `a.b.c.d/n` or `v6/n`.
public struct CIDR: Sendable, Equatable {
    let network: IPAddress
    let prefix: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let isV4 = !parts[0].contains(":")
        let maxBits = isV4 ? 32 : 128
        let bits = parts.count == 2 ? Int(parts[1]) : maxBits
        guard let bits, bits >= 0, bits <= maxBits else { return nil }
        network = address
        prefix = isV4 ? bits + 96 : bits
    }

    public func contains(_ address: IPAddress) -> Bool {
        var remaining = prefix
        for i in 0..<16 where remaining > 0 {
            let take = min(8, remaining)
            let mask: UInt8 = take == 8 ? 0xFF : ~(0xFF >> UInt8(take))
            if network.bytes[i] & mask != address.bytes[i] & mask { return false }
            remaining -= take
        }
        return true
    }
}
