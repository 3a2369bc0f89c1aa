// swift-tools-version:6.0
// transferd: background transfers as a service. Module split per docs/ARCHITECTURE.md.
import PackageDescription

let package = Package(
    name: "transferd",
    products: [
        .executable(name: "transferd", targets: ["transferd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        // C libraries, with typed shims for their variadic calls (Swift cannot call C varargs).
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),

        // epoll threads with timers and cross-thread wake-ups; shared by the HTTP server and the
        // curl engine so neither depends on the other.
        .systemLibrary(name: "CLinux"),
        .target(name: "Reactor", dependencies: ["CLinux"]),

        // HTTP/1.1 server on POSIX sockets. Knows nothing of transfers.
        .target(name: "HTTPServer", dependencies: [
            "Reactor", "CLinux",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),

        // SQLite: connections, cached statements, migrations, the group-committing writer.
        .target(name: "Store", dependencies: ["CSQLite", "Reactor"]),

        // libcurl multi loops, admission per session and host, the transfer of bytes.
        .target(name: "TransferEngine", dependencies: ["CCurl", "CLinux", "COpenSSL", "Reactor"]),

        // Lifecycles of tasks, sessions and webhook delivery as pure values: no I/O, no clocks.
        .target(name: "Lifecycles"),

        // The service core: configuration, API routes, JSON models, problem documents, lifecycle.
        .target(name: "TransferService", dependencies: [
            "HTTPServer", "Reactor", "CLinux", "Store", "TransferEngine", "Lifecycles",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),

        // main.swift only wires the modules together.
        .executableTarget(name: "transferd", dependencies: [
            "TransferService",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        .testTarget(name: "ReactorTests", dependencies: ["Reactor"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "Reactor"]),
        .testTarget(name: "TransferEngineTests", dependencies: [
            "TransferEngine", "HTTPServer", "Reactor",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "TransferServiceTests", dependencies: ["TransferService"]),
        .testTarget(name: "LifecyclesTests", dependencies: ["Lifecycles"]),
    ],
    swiftLanguageModes: [.v6]
)
