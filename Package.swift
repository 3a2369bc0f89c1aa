// swift-tools-version:6.0
// transferd: background transfers as a service. docs/ARCHITECTURE.md draws the modules.
import PackageDescription

let package = Package(
    name: "transferd",
    products: [
        .executable(name: "transferd", targets: ["transferd"]),
        // The client Swift services use, generated from openapi.yaml (docs/CLIENTS.md).
        .library(name: "TransferdClient", targets: ["TransferdClient"]),
        // The operator's command line, a client of the public API only.
        .executable(name: "transferctl", targets: ["transferctl"]),
    ],
    dependencies: [
        // Pinned exactly, so a fresh clone and the image build the same versions.
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
        // The runtime and transport of the generated TransferdClient.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", exact: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", exact: "1.4.0"),
        // Already resolved for the runtime; named here because transferctl's middleware sees its types.
        .package(url: "https://github.com/apple/swift-http-types", exact: "1.8.0"),
    ],
    targets: [
        // C libraries, with typed shims for their variadic calls (Swift cannot call C varargs).
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        // The Public Suffix List, for the cookies a session keeps.
        .systemLibrary(name: "CPSL", pkgConfig: "libpsl", providers: [.apt(["libpsl-dev"])]),
        // libpq, PostgreSQL's client library, for cluster mode's store.
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        // epoll threads with timers and cross-thread wake-ups; shared by the HTTP server and the
        // curl engine so neither depends on the other.
        .systemLibrary(name: "CLinux"),
        .target(name: "Reactor", dependencies: ["CLinux"]),

        // CRC-32C by the CPU's CRC32 instruction, chosen at run time, with a table fallback: in C
        // because the instruction is reached through intrinsics under a per-function target.
        .target(name: "CCRC32C"),

        // The digests of a transfer's bytes (SHA-256/512, SHA-1, MD5 by libcrypto, the process's one
        // crypto library; CRC-32C by CCRC32C) and HMAC-SHA256.
        .target(name: "Digests", dependencies: ["CCRC32C", "COpenSSL"]),

        // JSON: a strict parser (duplicate keys, depth, UTF-8) and an allocation-lean writer.
        .target(name: "JSON"),

        // HTTP/1.1 server on POSIX sockets. Knows nothing of transfers.
        .target(name: "HTTPServer", dependencies: [
            "Reactor", "CLinux", "JSON",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),

        // SQLite: connections, cached statements, migrations, the group-committing writer.
        .target(name: "Store", dependencies: ["CSQLite", "Reactor"]),

        // The words the model, the engine and the stores share (a URL as curl parses it, cookies,
        // a session's settings, the error codes a task completes with), so none imports another
        // to say them. The leaf of the transfer modules: curl only, for `URLParts`.
        .target(name: "TransferVocabulary", dependencies: ["CCurl"]),

        // Lifecycles of tasks, sessions and webhook delivery as pure values: no I/O, no clocks.
        .target(name: "Lifecycles", dependencies: ["TransferVocabulary"]),

        // libcurl multi loops, admission per session and host, the transfer of bytes.
        .target(name: "TransferEngine", dependencies: ["CCurl", "CLinux", "CPSL", "Digests", "Reactor", "TransferVocabulary"]),

        // Forwarding a request to the replica that holds its session (cluster mode) and relaying
        // the answer: one curl multi on a loop of its own, connections to each replica kept alive.
        .target(name: "ReplicaForwarding", dependencies: ["CCurl", "Digests", "HTTPServer", "Reactor", "TransferEngine"]),

        // Sessions, tasks, events, configuration and resume data as values, with their encoding
        // and the validation of client input. Knows no HTTP status, socket, store or thread.
        .target(name: "TransferModel", dependencies: ["Digests", "JSON", "Lifecycles", "Reactor", "TransferVocabulary"]),

        // What the core asks of a store: batched changes and typed reads (TransferStore), with an
        // in-memory implementation. No SQL in its interface, so a PostgreSQL store fits it too.
        .target(name: "TransferStore", dependencies: ["JSON", "Reactor", "TransferModel", "TransferVocabulary"]),

        // The SQLite implementation of TransferStore: schema, migrations, queries, group commit.
        .target(name: "SQLiteStore", dependencies: ["JSON", "Store", "TransferModel", "TransferStore", "TransferVocabulary"]),

        // PostgreSQL over libpq: a connection with prepared statements, typed rows, LISTEN/NOTIFY.
        .target(name: "Postgres", dependencies: ["CPostgres"]),

        // The PostgreSQL implementation of TransferStore (cluster mode): schema under an advisory
        // lock, group commit on a writer connection, a pool of readers, session leases and fencing.
        .target(name: "PostgresStore", dependencies: ["JSON", "Postgres", "Reactor", "TransferModel", "TransferStore", "TransferVocabulary"]),

        // The task core: sessions and tasks in memory, their lifecycles driven to the store and
        // the engine, events and webhook delivery, files on disk.
        .target(name: "TransferCore", dependencies: [
            "CLinux", "Digests", "JSON", "Lifecycles", "Reactor", "TransferEngine", "TransferModel", "TransferStore",
            "TransferVocabulary",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),

        // Cluster mode: this replica's leases on sessions in the shared store (heartbeat, renewal,
        // takeover of a dead replica's sessions) and where a session's requests go (the API asks,
        // through ReplicaForwarding's `SessionPlacement`).
        .target(name: "Cluster", dependencies: [
            "CLinux", "Postgres", "PostgresStore", "Reactor", "ReplicaForwarding", "TransferCore", "TransferEngine", "TransferStore",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // The REST API: routes, principals and what each may see and do (tenants), request reading,
        // problem documents. The only module that knows HTTP status codes. It also serves the web
        // console, whose files (Console/) are compiled into the binary (docs/CONSOLE.md).
        .target(name: "TransferAPI", dependencies: [
            "Digests", "HTTPServer", "JSON", "Lifecycles", "Reactor", "ReplicaForwarding", "TransferCore", "TransferEngine", "TransferModel",
            "TransferVocabulary",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ], resources: [.embedInCode("Console")]),

        // The service as a whole: configuration, start-up and shutdown, logging and metrics.
        .target(name: "TransferService", dependencies: [
            "CLinux", "Cluster", "Digests", "HTTPServer", "JSON", "Postgres", "PostgresStore", "Reactor", "ReplicaForwarding", "SQLiteStore", "TransferAPI",
            "TransferCore", "TransferEngine", "TransferModel", "TransferStore",
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

        // The HTTP client of the API, generated by swift-openapi-generator from openapi.yaml and
        // committed (`make client` regenerates it; TransferdClientTests fails when it is stale).
        .target(name: "TransferdClient", dependencies: [
            .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
        ]),

        // transferctl: download, upload, wait with live progress (the session's SSE stream), and the
        // API's resources as tables or JSON lines. Talks to transferd only through TransferdClient
        // and, for the event stream the buffering transport cannot carry, a streaming reader.
        .executableTarget(name: "transferctl", dependencies: [
            "TransferdClient",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
        ]),

        // Test support shared by test targets: an origin server on our HTTPServer.
        .target(name: "TestSupport", dependencies: [
            "Digests", "HTTPServer", "Reactor",
            .product(name: "Logging", package: "swift-log"),
        ], path: "Tests/TestSupport"),

        // libFuzzer targets, one per parser (Tests/fuzz/README.md). Built with -sanitize=fuzzer
        // and -DFUZZING by `make fuzz`; a plain build makes them replayers of input files.
        .target(name: "FuzzSupport"),
        .executableTarget(name: "FuzzHTTPRequest", dependencies: ["FuzzSupport", "HTTPServer"]),
        .executableTarget(name: "FuzzJSON", dependencies: ["FuzzSupport", "JSON"]),
        .executableTarget(name: "FuzzResumeData", dependencies: ["FuzzSupport", "TransferModel"]),
        .executableTarget(name: "FuzzMultipart", dependencies: ["FuzzSupport", "JSON", "TransferCore", "TransferModel"]),
        .executableTarget(name: "FuzzAuthFile", dependencies: ["FuzzSupport", "TransferAPI", "TransferCore"]),
        .executableTarget(name: "FuzzSessionConfiguration", dependencies: ["FuzzSupport", "JSON", "TransferModel"]),
        .executableTarget(name: "FuzzTaskCreation", dependencies: ["FuzzSupport", "JSON", "TransferModel", "TransferVocabulary"]),

        .testTarget(name: "ReactorTests", dependencies: ["Reactor"]),
        .testTarget(name: "DigestsTests", dependencies: ["Digests"]),
        .testTarget(name: "LifecyclesTests", dependencies: ["Lifecycles", "TransferVocabulary"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "Reactor"]),
        .testTarget(name: "TransferEngineTests", dependencies: [
            "CCurl", "CLinux", "Digests", "Reactor", "TestSupport", "TransferEngine", "TransferVocabulary",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "TransferAPITests", dependencies: [
            "Digests", "HTTPServer", "Reactor", "ReplicaForwarding", "TestSupport", "TransferAPI", "TransferCore", "TransferEngine",
            "TransferModel", "TransferStore",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "TransferCoreTests", dependencies: [
            "HTTPServer", "JSON", "Lifecycles", "Reactor", "TestSupport", "TransferCore", "TransferEngine", "TransferModel", "TransferStore",
            "TransferVocabulary",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The generated client against a real transferd process (built as a dependency).
        .testTarget(name: "TransferdClientTests", dependencies: [
            "TestSupport", "TransferdClient", "transferd",
            .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
        ]),
        .testTarget(name: "TransferctlTests", dependencies: ["transferctl"]),
        .testTarget(name: "ClusterTests", dependencies: ["Cluster", "TransferEngine"]),
        .testTarget(name: "TransferStoreTests", dependencies: [
            "Digests", "Postgres", "PostgresStore", "Reactor", "SQLiteStore", "Store", "TestSupport", "TransferModel", "TransferStore",
            "TransferVocabulary",
        ]),
    ],
    swiftLanguageModes: [.v6]
)
