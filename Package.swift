// swift-tools-version:6.2
import PackageDescription

/// Settings every Osprey target shares: Swift 6 with strict concurrency (the language mode's default), the upcoming
/// features STYLE.md asks for, and warnings treated as errors so the build stays warning-free.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "Osprey",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "OspreyCodecs", targets: ["OspreyCodecs"]),
        .library(name: "Osprey", targets: ["Osprey"]),
        .library(name: "OspreyServer", targets: ["OspreyServer"]),
        .library(name: "OspreyTesting", targets: ["OspreyTesting"]),
        .executable(name: "osprey", targets: ["OspreyCLI"]),
        .executable(name: "osprey-proxy", targets: ["OspreyProxyCLI"]),
    ],
    traits: [
        // swift-otel's exporter costs minutes of build time that most builds do not need: it is built only when asked
        // for (`swift build --traits OTLP`, `make OSPREY_TRAITS=OTLP`), and CI builds and tests it.
        .trait(
            name: "OTLP", description: "`osprey serve --otlp-endpoint` exports traces over OTLP/HTTP with swift-otel"),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // Without its default traits: they link swift-configuration and all of Foundation (ICU included), which
        // Osprey does not use and which cost every start of `osprey` about a millisecond.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        // MARK: Our C: setjmp/longjmp trampolines and macro wrappers, and the loader of the libraries opened on first use

        // None of the C libraries is linked: `COspreyLibraryLoader` opens each when first needed (its header says why).
        // Their headers come from the default include path on Debian and Ubuntu (libheif's from the multiarch one) and
        // Homebrew; `make deps` installs them.
        .target(
            name: "COspreyLibraryLoader",
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        .target(name: "COspreyCodecShims", dependencies: ["COspreyLibraryLoader"]),

        // MARK: Swift layers, bottom to top

        .target(
            name: "OspreyCodecs",
            dependencies: ["COspreyLibraryLoader", "COspreyCodecShims"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Osprey",
            dependencies: [
                "OspreyCodecs",
                "COspreyLibraryLoader",
                "COspreyCodecShims",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "OspreyServer",
            dependencies: [
                "Osprey",
                "OspreyCodecs",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The command line: `osprey`, and `osprey-proxy`, which runs `osprey serve` and `osprey sign` for it so that
        // only the proxy's commands load the server (Sources/OspreyCLI/ProxyCommands.swift says why and how).
        .target(
            name: "OspreyCommandLine",
            dependencies: [
                "Osprey",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "OspreyCLI",
            dependencies: [
                "Osprey",
                "OspreyCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "OspreyProxyCLI",
            dependencies: [
                "Osprey",
                "OspreyCommandLine",
                "OspreyServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTLP"])),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "OspreyTesting",
            dependencies: [
                "Osprey",
                "OspreyCodecs",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Examples: built with everything else, each run by a test (Tests/OspreyCLITests/ExamplesTests.swift)

        .executableTarget(
            name: "EmbeddedProxyExample",
            dependencies: [
                "OspreyServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Examples/EmbeddedProxy",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "BatchThumbnailerExample",
            dependencies: ["Osprey", "OspreyCodecs"],
            path: "Examples/BatchThumbnailer",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "CustomProcessorsExample",
            dependencies: ["Osprey", "OspreyCodecs"],
            path: "Examples/CustomProcessors",
            swiftSettings: swiftSettings
        ),

        // MARK: Tests

        .testTarget(
            name: "OspreyCodecsTests",
            dependencies: ["OspreyCodecs", "OspreyTesting", "COspreyCodecShims"],
            swiftSettings: swiftSettings
        ),
        // A second process for the disk cache's multi-process tests.
        .executableTarget(
            name: "DiskCacheWorker",
            dependencies: ["Osprey", "OspreyTesting"],
            path: "Tests/DiskCacheWorker",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OspreyTests",
            dependencies: [
                "Osprey",
                "COspreyCodecShims",
                "OspreyTesting",
                "DiskCacheWorker",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OspreyServerTests",
            dependencies: [
                "OspreyServer",
                "Osprey",
                "OspreyCodecs",
                "OspreyTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OspreyCLITests",
            dependencies: [
                "OspreyCLI", "OspreyProxyCLI", "OspreyCommandLine", "Osprey", "OspreyCodecs", "OspreyServer",
                "OspreyTesting",
                "EmbeddedProxyExample", "BatchThumbnailerExample", "CustomProcessorsExample",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OspreyTestingTests",
            dependencies: [
                "OspreyTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

// The sanitizer suites (`make test-asan`, `make test-tsan`): OSPREY_SANITIZER=address or thread instruments Osprey's
// own targets, Swift and C, and links the sanitizer's runtime; the dependencies stay as `make test` built them, so a
// sanitizer build in the same folder compiles only our targets again (the C libraries the codecs open are not
// instrumented either way). Under ThreadSanitizer, OSPREY_TSAN swaps the standard library's Mutex, which TSan cannot
// see, for a pthread mutex, which it can (Sources/OspreyCodecs/Mutex+ThreadSanitizer.swift).
if let sanitizer = Context.environment["OSPREY_SANITIZER"] {
    let tsan: [SwiftSetting] = sanitizer == "thread" ? [.define("OSPREY_TSAN")] : []
    for target in package.targets {
        if ["COspreyLibraryLoader", "COspreyCodecShims"].contains(target.name) {
            target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-fsanitize=\(sanitizer)"])]
        } else {
            target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])] + tsan
        }
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])]
    }
}

// OSPREY_LIBRARY_TESTS_ONLY=1, which the sanitizer suites also set (they test the library alone), leaves out the
// server, the command line, the examples and those targets' tests, which they would otherwise compile again,
// instrumented, for nothing.
if Context.environment["OSPREY_LIBRARY_TESTS_ONLY"] == "1" {
    let unused: Set = [
        "OspreyServer", "OspreyCommandLine", "OspreyCLI", "OspreyProxyCLI", "EmbeddedProxyExample",
        "BatchThumbnailerExample", "CustomProcessorsExample", "OspreyServerTests", "OspreyCLITests",
    ]
    package.targets.removeAll { unused.contains($0.name) }
    package.products.removeAll { ["OspreyServer", "osprey", "osprey-proxy"].contains($0.name) }
}
