import Glibc

/// A blocking TCP connection to a server a test started on loopback.
package enum LoopbackSocket {
    /// Connects to 127.0.0.1:`port`: the descriptor, or the errno of what failed.
    package static func connect(port: UInt16) -> Result<Int32, LoopbackSocket.Failure> {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(Failure(code: errno)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            return .failure(Failure(code: code))
        }
        return .success(fd)
    }

    package struct Failure: Error, CustomStringConvertible {
        package let code: Int32
        package var description: String { "connect: \(String(cString: strerror(code)))" }
    }
}
