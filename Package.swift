// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
    name: "Klaxon",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "klaxon", targets: ["klaxon"]),
        .library(name: "KlaxonCore", targets: ["KlaxonCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Pinned to 6.2.x: `YAMLLimits` walks libyaml's events through Yams' C target `CYaml` (not a
        // product), the libyaml Yams links in; `YAMLLimitsTests` checks what it relies on before a bump.
        .package(url: "https://github.com/jpsim/Yams", .upToNextMinor(from: "6.2.2")),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/JohnSundell/Plot", from: "0.14.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Imported directly (NIOCore, NIOPosix, NIOHTTP1, NIOConcurrencyHelpers), so declared, not borrowed
        // from Hummingbird's and AsyncHTTPClient's dependencies.
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
    ],
    targets: [
        // The linear-time regex engine of label matchers (RE2 syntax, Alertmanager's) and the budget of its
        // work. Pure: the standard library alone, nothing of Klaxon's (issue 40).
        .target(name: "KlaxonRegex", dependencies: [], swiftSettings: swiftSettings),
        // Pure domain: rule kinds, alert state machine, readings parsing. Foundation + Logging only.
        .target(
            name: "KlaxonCore",
            dependencies: ["KlaxonRegex", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings,
            plugins: ["RevisionStamp"]
        ),
        // Stamps the git commit of a source build into `BuildInfo` (a release stamps its own).
        .plugin(name: "RevisionStamp", capability: .buildTool()),
        // The store's specification: the role protocols consumers take, the value types they speak, and
        // the logic every backend shares (evaluation, event rules, group timing, metric deltas). No driver.
        .target(
            name: "KlaxonStore",
            dependencies: [
                "KlaxonCore", "KlaxonRegex",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // SQLite (WAL) through GRDB: one backend of `KlaxonStore` (migrations, SQL, binds, decoding).
        .target(
            name: "KlaxonSQLite",
            dependencies: [
                "KlaxonCore", "KlaxonStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // PostgreSQL through postgres-nio: the sibling backend of `KlaxonStore` (issue 17). It never imports
        // `KlaxonSQLite`, nor the other way round.
        .target(
            name: "KlaxonPostgres",
            dependencies: [
                "KlaxonCore", "KlaxonStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // libcurl's easy API, for SMTP (typed wrappers over its variadic setopt in shim.h).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The C types of the librsvg, cairo and GLib functions the status site's charts as PNG use
        // (`SVGRaster`). librsvg is loaded with dlopen at the first render, not linked (linked, its
        // libraries cost every process some 9 MiB at start), so no pkg-config: the build needs no
        // header of it, the daemon Debian's librsvg2-2 and a font (fonts-dejavu-core; Deploy/setup.sh).
        .systemLibrary(name: "CRsvg"),
        // Source parsers (pure, tested on payloads) and fetchers (AsyncHTTPClient).
        .target(
            name: "KlaxonSources",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "KlaxonCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Notifiers (webhook presets, email through libcurl, stdout), templates, the dispatcher.
        .target(
            name: "KlaxonDelivery",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "KlaxonCore", "KlaxonRegex", "KlaxonStore", "CCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test servers for the adapters' tests: a scriptable HTTP sink on Hummingbird, SMTP via aiosmtpd;
        // a headless Chromium driven over the DevTools protocol for the status site's tests.
        .target(
            name: "KlaxonTesting",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "KlaxonServer",
                // `offPool` for the Python mail reader (`python(_:input:)`).
                "KlaxonCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                // The headless browser's DevTools connection.
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The throw-away PostgreSQL server's readiness probe and per-test databases.
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The daemon's HTTP server: health, readiness, metrics, the push and alerts API, the status site.
        .target(
            name: "KlaxonServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                "KlaxonCore", "KlaxonRegex", "KlaxonStore",
                // The charts as PNG: librsvg on threads of their own (`SVGRaster`).
                "CRsvg",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // The service that answers chat button presses after their request.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The status site's typed HTML.
                .product(name: "Plot", package: "Plot"),
            ],
            swiftSettings: swiftSettings
        ),
        // Config and rule loading, command implementations, wiring.
        .target(
            name: "KlaxonApp",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                // The blocking pool `offPool` runs on (`BlockingPool.useNIOThreadPool`).
                .product(name: "NIOPosix", package: "swift-nio"),
                "KlaxonCore", "KlaxonStore", "KlaxonSQLite", "KlaxonPostgres", "KlaxonDelivery", "KlaxonSources",
                "KlaxonServer",
                .product(name: "Yams", package: "Yams"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The daemon's SIGHUP (a reload) as an async sequence.
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // `klaxon demo`: the daemon offline, with local stand-ins for the upstreams and a chat sink (the
        // only reason anything above the server links Hummingbird).
        .target(
            name: "KlaxonDemo",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                "KlaxonCore", "KlaxonStore", "KlaxonSQLite", "KlaxonDelivery", "KlaxonServer", "KlaxonApp",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "klaxon",
            dependencies: [
                "KlaxonApp", "KlaxonDemo", "KlaxonCore", "KlaxonStore", "KlaxonDelivery", "KlaxonSources",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // Release-build benchmark driver: generates data, runs the real `klaxon` binary, reports wall time and peak RSS.
        .executableTarget(
            name: "klaxon-bench",
            dependencies: ["KlaxonCore"],
            path: "Sources/KlaxonBench",
            swiftSettings: swiftSettings
        ),
        // Release-build delivery benchmark: the durable outbox to a loopback webhook sink.
        .executableTarget(
            name: "klaxon-delivery-bench",
            dependencies: ["KlaxonCore", "KlaxonStore", "KlaxonSQLite", "KlaxonDelivery", "KlaxonTesting"],
            path: "Sources/KlaxonDeliveryBench",
            swiftSettings: swiftSettings
        ),
        // The regex engine's own tests, with the differential test against RE2 (`Tests/Fixtures/re2`).
        .testTarget(name: "KlaxonRegexTests", dependencies: ["KlaxonRegex"], swiftSettings: swiftSettings),
        .testTarget(
            name: "KlaxonCoreTests", dependencies: ["KlaxonCore", "KlaxonRegex"], swiftSettings: swiftSettings),
        .testTarget(
            name: "KlaxonStoreTests",
            dependencies: ["KlaxonCore", "KlaxonStore", "KlaxonSQLite"],
            swiftSettings: swiftSettings
        ),
        // One store conformance suite, run against SQLite and a throw-away PostgreSQL.
        .testTarget(
            name: "KlaxonStoreConformanceTests",
            dependencies: [
                "KlaxonCore", "KlaxonStore", "KlaxonSQLite", "KlaxonPostgres", "KlaxonTesting",
                .product(name: "Logging", package: "swift-log"),
                // Each backend's SQL behind the store's back, to make a write fail.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KlaxonAppTests",
            dependencies: [
                "KlaxonApp", "KlaxonDemo", "KlaxonCore", "KlaxonStore", "KlaxonSQLite", "KlaxonDelivery",
                "KlaxonTesting",
                .product(name: "PropertyBased", package: "swift-property-based"),
                // HTTP behaviour in process (`app.test(.router)`), against the in-memory store.
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KlaxonSourcesTests",
            dependencies: ["KlaxonSources", "KlaxonCore", "KlaxonTesting"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KlaxonDeliveryTests",
            dependencies: ["KlaxonDelivery", "KlaxonCore", "KlaxonStore", "KlaxonSQLite", "KlaxonTesting"],
            swiftSettings: swiftSettings
        ),
    ]
)
