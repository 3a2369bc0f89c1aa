import CLinux
import Glibc
import Logging
import Reactor

/// An HTTP/1.1 server: one listening socket, `loopCount` event-loop threads, routes.
public final class HTTPServer: Sendable {
    private let shared: ServerShared
    /// The address actually bound (the port is filled in when 0 was asked for).
    public let boundAddress: SocketAddress

    /// Binds and starts serving.
    public init(configuration: HTTPServerConfiguration, router: Router, logger: Logger) throws(ServerStartError) {
        let (fd, bound) = try HTTPServer.listen(on: configuration.address)
        boundAddress = bound
        shared = ServerShared(configuration: configuration, router: router, logger: logger, listenFD: fd)
        let workers = (0..<max(1, configuration.loopCount)).map { ServerWorker(index: $0, shared: shared) }
        shared.setWorkers(workers)
        for worker in workers {
            worker.startSweeping()
            worker.loop.start()
        }
        let first = workers[0]
        first.loop.execute { first.startListening() }
    }

    public var openConnections: Int { shared.connectionCount }

    /// Graceful shutdown: stop accepting, close idle connections, let in-flight responses finish
    /// (up to `shutdownGrace` seconds), then close what is left and stop the loops. Blocks.
    public func shutdown() {
        // Only the first call shuts down: a second would join loop threads already joined.
        guard shared.beginShutdown() else { return }
        let workers = shared.workers
        let first = workers[0]
        first.loop.execute { [shared] in
            first.stopListening()
            Glibc.close(shared.listenFD)
        }
        for worker in workers { worker.loop.execute { worker.drainAll() } }
        let deadline = MonotonicClock.after(seconds: shared.configuration.shutdownGrace)
        while shared.connectionCount > 0 && MonotonicClock.now() < deadline {
            usleep(10_000)
        }
        for worker in workers {
            worker.loop.execute { worker.closeAll() }
            worker.loop.stopAndJoin()
        }
        // Workers and `shared` refer to each other: a server shut down kept all of it, its loops'
        // descriptors included, for the life of the process (LeakSanitizer found).
        shared.setWorkers([])
    }

    private static func listen(on address: SocketAddress) throws(ServerStartError) -> (Int32, SocketAddress) {
        let fd = socket(address.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ServerStartError("socket: \(errnoDescription())") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockaddr { bind(fd, $0, $1) } ?? -1
        guard bound == 0 else {
            let message = "cannot listen on \(address): \(errnoDescription())"
            Glibc.close(fd)
            throw ServerStartError(message)
        }
        guard Glibc.listen(fd, 4096) == 0 else {
            let message = "listen: \(errnoDescription())"
            Glibc.close(fd)
            throw ServerStartError(message)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port: UInt16 = withUnsafePointer(to: &storage) { ptr in
            address.isIPv6
                ? ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
                : ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (fd, address.withPort(port))
    }
}

public struct ServerStartError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
