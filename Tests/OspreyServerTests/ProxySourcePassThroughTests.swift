import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// Never larger than the source: a request the source already answers (its format, no resize, no processing) gets
/// the source's own bytes, metadata stripped without re-encoding, when an encode would be larger.
@Suite struct ProxySourcePassThroughTests {
    @Test func aSmallerSourceIsAnsweredAsItIs() async throws {
        var pixels: [UInt8] = []
        for y in 0..<120 {
            for x in 0..<160 { pixels += [UInt8(x), UInt8(y * 2), UInt8((x * y) % 256)] }
        }
        var image = Image(pixels: try PixelBuffer(width: 160, height: 120, format: .rgb8, bytes: pixels))
        image.metadata = ImageMetadata(exif: SyntheticEXIF.photo(littleEndian: false))
        var options = EncodingOptions()
        options.quality = 40
        options.metadata = .all
        let source = try ImageEncoder.encode(image, as: .jpeg, options: options)
        let decoded = try ImageDecoder.decode(source)
        let stripped = try #require(ImageEncoder.sourceBytes(source, of: decoded, as: .jpeg, metadata: .strip))
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/s.jpg", .ok(source, contentType: "image/jpeg"))
            try await withProxy { client in
                func get(_ parameters: [(String, String)]) async throws -> [UInt8] {
                    let response = try await client.execute(
                        uri: imageURI([("url", origin.url("/s.jpg"))] + parameters), method: .get)
                    #expect(response.status == .ok)
                    return Array(response.body.readableBytesView)
                }
                // q95 would be larger than this q40 source: the source, without its EXIF, the same pixels.
                let passed = try await get([("format", "jpeg"), ("q", "95")])
                #expect(passed == stripped && passed.count < source.count)
                let shown = try ImageDecoder.decode(passed)
                #expect(shown.pixels == decoded.pixels && shown.metadata.isEmpty)
                // Metadata kept as asked: the source whole.
                #expect(try await get([("q", "95"), ("strip", "0")]) == source)
                // Resized, or a quality that makes fewer bytes: encoded.
                let resized = try await get([("q", "95"), ("w", "80")])
                #expect(try ImageDecoder.decode(resized).width == 80)
                let low = try await get([("format", "jpeg"), ("q", "15")])
                #expect(low != stripped && low.count < stripped.count)
                #expect(origin.requestCount("/s.jpg") == 1)
            }
        }
    }
}
