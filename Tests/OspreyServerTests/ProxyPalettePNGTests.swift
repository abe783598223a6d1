import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `q` below 100 with `format=png`: a palette of at most 256 colours (libimagequant), a variant of its own; without
/// it, for a PNG kept in its own format, and for imgproxy's quality, lossless truecolour as theirs is.
@Suite struct ProxyPalettePNGTests {
    @Test func qBelow100QuantisesPNGOutput() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let texture = try ProxyPerceptualQualityTests.texture()
            origin.route("/t.png", .ok(texture, contentType: "image/png"))
            try await withProxy(setup: .live, { $0.imgproxy = ImgproxyConfiguration(path: "/ip") }) { client in
                func get(_ uri: String) async throws -> [UInt8] {
                    let response = try await client.execute(uri: uri, method: .get)
                    #expect(response.status == .ok, "\(uri): \(String(buffer: response.body))")
                    return Array(response.body.readableBytesView)
                }
                let source = origin.url("/t.png")
                let lossless = try await get(imageURI([("url", source), ("format", "png")]))
                let palette = try await get(imageURI([("url", source), ("format", "png"), ("q", "60")]))
                let imgproxy = try await get("/ip/insecure/q:60/f:png/plain/\(source)")
                // Without format=png, the PNG keeps its own format losslessly: q is for the lossy formats then.
                let ownFormat = try await get(imageURI([("url", source), ("q", "60")]))
                #expect(lossless[25] == 2 && imgproxy[25] == 2 && ownFormat[25] == 2)
                #expect(palette[25] == 3)
                #expect(palette.count < lossless.count / 2, "\(palette.count) vs \(lossless.count)")
                let pixels = try ImageDecoder.decode(palette).pixels
                #expect(try PNGPaletteCount.colours(pixels) <= 256)
                #expect(try ImageDecoder.decode(lossless).pixels == ImageDecoder.decode(texture).pixels)
            }
        }
    }
}

/// Counts an image's distinct colours.
enum PNGPaletteCount {
    static func colours(_ pixels: PixelBuffer) throws -> Int {
        let rgb = try pixels.converted(to: .rgb8)
        var colours = Set<UInt32>()
        for y in 0..<rgb.height {
            let row = rgb.row(y)
            for x in 0..<rgb.width {
                colours.insert(UInt32(row[3 * x]) << 16 | UInt32(row[3 * x + 1]) << 8 | UInt32(row[3 * x + 2]))
            }
        }
        return colours.count
    }
}
