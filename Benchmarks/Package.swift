// swift-tools-version:6.2
import PackageDescription

// The benchmarks live in their own package so that package-benchmark and its plugin never enter the library's build.
// Run them with `make bench` from the repository root (release builds only).
let package = Package(
    name: "OspreyBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Osprey", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(
            url: "https://github.com/ordo-one/package-benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Decode timing for the peer comparison (compare_codecs.py): one process per measurement, so that peak
        // memory is the decode's own.
        .executableTarget(
            name: "codec-throughput",
            dependencies: [.product(name: "OspreyCodecs", package: "Osprey")],
            path: "Sources/codec-throughput",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)]
        ),
        // The memory cache's hit latency and scaling (the Caches issue's targets).
        .executableTarget(
            name: "cache-benchmark",
            dependencies: [
                .product(name: "Osprey", package: "Osprey"),
                .product(name: "OspreyCodecs", package: "Osprey"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/cache-benchmark",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)]
        ),
        // Downloads from a local nginx with ImageDownloader and URLSession (compare_downloads.py adds curl and aiohttp).
        .executableTarget(
            name: "download-benchmark",
            dependencies: [.product(name: "Osprey", package: "Osprey")],
            path: "Sources/download-benchmark",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)]
        ),
        // An HTTP/1.1 client on SwiftNIO alone: the floor any NIO-based download path pays (compare_prefetch.py).
        .executableTarget(
            name: "nio-floor",
            dependencies: [
                .product(name: "Osprey", package: "Osprey"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/nio-floor",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)]
        ),
        // AsyncHTTPClient alone, driven as the downloader drives it (compare_prefetch.py).
        .executableTarget(
            name: "ahc-floor",
            dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")],
            path: "Sources/ahc-floor",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)]
        ),
        // ImageManager loads from memory, disk and a local nginx (compare_manager.py adds requests + Pillow).
        .executableTarget(
            name: "manager-benchmark",
            dependencies: [
                .product(name: "Osprey", package: "Osprey"),
                .product(name: "OspreyCodecs", package: "Osprey"),
            ],
            path: "Sources/manager-benchmark",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)]
        ),
        // The thumbnail job and resize alone (compare_processors.py adds Pillow and pyvips).
        .executableTarget(
            name: "processor-benchmark",
            dependencies: [
                .product(name: "Osprey", package: "Osprey"),
                .product(name: "OspreyCodecs", package: "Osprey"),
            ],
            path: "Sources/processor-benchmark",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)]
        ),
        .executableTarget(
            name: "CodecsBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "OspreyCodecs", package: "Osprey"),
                .product(name: "OspreyTesting", package: "Osprey"),
            ],
            path: "Benchmarks/CodecsBenchmarks",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .treatAllWarnings(as: .error)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ]
)
