// swift-tools-version:6.2
import PackageDescription

// libFuzzer harnesses, one binary per decoder and per parser of request text, in their own package so that their flags never touch the library's
// build. SwiftPM links an executable's `main` to `<Module>_main`; each harness defines that with @_cdecl (hence
// -parse-as-library) and runs libFuzzer's LLVMFuzzerRunDriver. Build and run them with `make fuzz SECONDS=N` from the
// repository root, which adds -sanitize=fuzzer,address to every Swift and C module.
let harness: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]

let package = Package(
    name: "OspreyFuzz",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "fuzz-jpeg", targets: ["FuzzJPEG"]),
        .executable(name: "fuzz-png", targets: ["FuzzPNG"]),
        .executable(name: "fuzz-gif", targets: ["FuzzGIF"]),
        .executable(name: "fuzz-webp", targets: ["FuzzWebP"]),
        .executable(name: "fuzz-avif", targets: ["FuzzAVIF"]),
        .executable(name: "fuzz-heic", targets: ["FuzzHEIC"]),
        .executable(name: "fuzz-jxl", targets: ["FuzzJXL"]),
        .executable(name: "fuzz-colour", targets: ["FuzzColour"]),
        .executable(name: "fuzz-url", targets: ["FuzzURL"]),
        .executable(name: "fuzz-proxy-query", targets: ["FuzzProxyQuery"]),
        .executable(name: "fuzz-imgproxy-url", targets: ["FuzzImgproxyURL"]),
        .executable(name: "fuzz-thumbor-url", targets: ["FuzzThumborURL"]),
    ],
    dependencies: [
        .package(name: "Osprey", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .target(name: "CFuzzerDriver"),
        .target(
            name: "FuzzSupport",
            dependencies: ["CFuzzerDriver", .product(name: "OspreyCodecs", package: "Osprey")]
        ),
        .executableTarget(name: "FuzzJPEG", dependencies: ["FuzzSupport"], swiftSettings: harness),
        .executableTarget(name: "FuzzPNG", dependencies: ["FuzzSupport"], swiftSettings: harness),
        .executableTarget(name: "FuzzGIF", dependencies: ["FuzzSupport"], swiftSettings: harness),
        .executableTarget(name: "FuzzWebP", dependencies: ["FuzzSupport"], swiftSettings: harness),
        .executableTarget(name: "FuzzAVIF", dependencies: ["FuzzSupport"], swiftSettings: harness),
        .executableTarget(name: "FuzzHEIC", dependencies: ["FuzzSupport"], swiftSettings: harness),
        .executableTarget(
            name: "FuzzJXL", dependencies: ["FuzzSupport", .product(name: "OspreyCodecs", package: "Osprey")],
            swiftSettings: harness),
        .executableTarget(
            name: "FuzzColour",
            dependencies: ["FuzzSupport", .product(name: "OspreyCodecs", package: "Osprey")],
            swiftSettings: harness
        ),
        .executableTarget(
            name: "FuzzURL",
            dependencies: [
                "FuzzSupport", .product(name: "Osprey", package: "Osprey"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: harness
        ),
        .executableTarget(
            name: "FuzzProxyQuery",
            dependencies: ["FuzzSupport", .product(name: "OspreyServer", package: "Osprey")],
            swiftSettings: harness
        ),
        .executableTarget(
            name: "FuzzImgproxyURL",
            dependencies: ["FuzzSupport", .product(name: "OspreyServer", package: "Osprey")],
            swiftSettings: harness
        ),
        .executableTarget(
            name: "FuzzThumborURL",
            dependencies: ["FuzzSupport", .product(name: "OspreyServer", package: "Osprey")],
            swiftSettings: harness
        ),
    ]
)
