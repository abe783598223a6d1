import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// Test images made with our own encoders, so the suite needs no corpus.
enum Fixtures {
    /// A JPEG of a smooth gradient.
    static func jpeg(width: Int = 640, height: Int = 480) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let index = (y * width + x) * 3
                bytes[index] = UInt8(x * 255 / max(width - 1, 1))
                bytes[index + 1] = UInt8(y * 255 / max(height - 1, 1))
                bytes[index + 2] = 128
            }
        }
        let pixels = try PixelBuffer(width: width, height: height, format: .rgb8, bytes: bytes)
        return try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, quality: 90)
    }

    /// A PNG of one colour (compresses to almost nothing, decodes to `width × height` pixels).
    static func flatPNG(width: Int, height: Int) throws -> [UInt8] {
        let pixels = try PixelBuffer(
            width: width, height: height, format: .rgb8, bytes: [UInt8](repeating: 90, count: width * height * 3))
        return try ImageEncoder.encode(Image(pixels: pixels), as: .png)
    }

    /// The solid colours of ``animatedGIF()``'s frames.
    static let frameColours: [[UInt8]] = [[255, 0, 0], [0, 255, 0], [0, 0, 255]]

    /// A 40 × 30 GIF of three solid frames, red, green, blue, 100 ms each.
    static func animatedGIF() throws -> [UInt8] {
        let frames = try frameColours.map { colour in
            let pixels = try PixelBuffer(
                width: 40, height: 30, format: .rgb8, bytes: Array([[UInt8]](repeating: colour, count: 1200).joined()))
            return ImageFrame(pixels: pixels, duration: .milliseconds(100))
        }
        return try ImageEncoder.encode(Image(frames: frames), as: .gif)
    }

    /// Whether two colours are within GIF palette quantisation of each other (8 levels per channel).
    static func isClose(_ colour: [UInt8], to expected: [UInt8]) -> Bool {
        colour.count == expected.count && zip(colour, expected).allSatisfy { abs(Int($0) - Int($1)) <= 8 }
    }

    static func decode(_ body: ByteBuffer) throws -> Image {
        try ImageDecoder.decode(Array(body.readableBytesView))
    }
}

/// Builds `/img?...` with every name and value percent-encoded.
func imageURI(_ parameters: [(String, String)]) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    let query = parameters.map { name, value in
        name.addingPercentEncoding(withAllowedCharacters: allowed)! + "="
            + value.addingPercentEncoding(withAllowedCharacters: allowed)!
    }
    return "/img?" + query.joined(separator: "&")
}

/// A configuration for tests: a fresh cache directory, unsigned requests and private networks allowed (the origin
/// is on loopback) unless a test says otherwise. The source and processing limits run on a clock nobody moves unless
/// a test does (``TestClock``): a debug build under a whole suite's load can take longer than the real limits to
/// render, and only the tests of those limits may answer 503 or 504 for it (they set their own clock).
func testConfiguration(cacheDirectory: String) -> ServerConfiguration {
    var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.cacheDirectory = cacheDirectory
    configuration.allowsUnsigned = true
    configuration.allowsPrivateNetworks = true
    configuration.clock = TestClock()
    return configuration
}

/// A temporary directory removed after `body`.
func withTemporaryDirectory<Result>(_ body: (String) async throws -> Result) async throws -> Result {
    let path = NSTemporaryDirectory() + "osprey-serve-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// Runs `body` against an application built from `configure`d ``testConfiguration(cacheDirectory:)``.
func withProxy(
    setup: TestingSetup = .router,
    _ configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: @Sendable (any TestClientProtocol) async throws -> Void
) async throws {
    try await withTemporaryDirectory { directory in
        var configuration = testConfiguration(cacheDirectory: directory)
        configure(&configuration)
        var logger = Logger(label: "osprey.serve.test")
        logger.logLevel = .critical
        let app = buildApplication(configuration: configuration, logger: logger)
        try await app.test(setup, body)
    }
}

/// A resolver with a fixed table, for names that must resolve to a given address in a test.
struct FixedResolver: HostResolving {
    let table: [String: [IPAddress]]

    func addresses(of host: String) async throws(DownloadError) -> [IPAddress] {
        guard let addresses = table[host] else { throw .cannotConnect(reason: "no such name") }
        return addresses
    }
}

extension TestResponse {
    /// The body as JSON, for error bodies.
    func json() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] ?? [:]
    }
}
