import Glibc

/// An IPv4 or IPv6 address and port to listen on, parsed from `host:port` or `[v6]:port`.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    public let isIPv6: Bool

    public init?(_ text: String) {
        var hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
            isIPv6 = true
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            isIPv6 = false
        }
        if hostPart == "localhost" { hostPart = "127.0.0.1" }
        guard let port = UInt16(portPart), !hostPart.isEmpty else { return nil }
        self.host = String(hostPart)
        self.port = port
        guard withSockaddr({ _, _ in true }) != nil else { return nil }
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether every connection to this address comes from this machine.
    public var isLoopback: Bool {
        if isIPv6 { return host == "::1" }
        return host.hasPrefix("127.")
    }

    /// Calls `body` with the binary form; nil when `host` is not a numeric address.
    public func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        if isIPv6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &sa.sin6_addr) == 1 else { return nil }
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &sa.sin_addr) == 1 else { return nil }
        return withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    public func withPort(_ port: UInt16) -> SocketAddress {
        SocketAddress(isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)")!
    }

    /// The textual form of a peer address, for logs.
    static func describe(_ storage: sockaddr_storage) -> String {
        var storage = storage
        let family = Int32(storage.ss_family)
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return withUnsafePointer(to: &storage) { ptr -> String in
            if family == AF_INET6 {
                return ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var addr = sin6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
                    return "[\(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))]:\(UInt16(bigEndian: sin6.pointee.sin6_port))"
                }
            }
            return ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var addr = sin.pointee.sin_addr
                inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
                return "\(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)):\(UInt16(bigEndian: sin.pointee.sin_port))"
            }
        }
    }
}
