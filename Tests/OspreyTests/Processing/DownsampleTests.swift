import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

/// Downsampling: the decoder scales first, the resize finishes, and the manager does it by itself.
@Suite("Downsample")
struct DownsampleTests {
    func jpeg(width: Int, height: Int) throws -> [UInt8] {
        try ImageEncoder.encode(
            Image(pixels: try ProcessorFixtures.picture(width: width, height: height)), as: .jpeg, quality: 90)
    }

    @Test("the decoding size covers the output for every fit, and is nil when nothing shrinks")
    func decodingSizes() throws {
        let header = ImageHeader(format: .jpeg, width: 4000, height: 3000)
        #expect(
            try ImageProcessors.Downsample(width: 256, height: 256).decodingSize(for: header)
                == ImageSize(width: 256, height: 192))
        #expect(
            try ImageProcessors.Downsample(width: 256, height: 256, fit: .cover).decodingSize(for: header)
                == ImageSize(width: 342, height: 256))
        #expect(
            try ImageProcessors.Downsample(width: 100, height: 300, fit: .fill).decodingSize(for: header)
                == ImageSize(width: 400, height: 300))
        #expect(try ImageProcessors.Downsample(width: 5000).decodingSize(for: header) == nil)
        // An EXIF-turned JPEG is planned in display orientation.
        let turned = ImageHeader(format: .jpeg, width: 4000, height: 3000, orientation: .right)
        #expect(
            try ImageProcessors.Downsample(width: 300).decodingSize(for: turned) == ImageSize(width: 300, height: 400))
    }

    @Test("a large JPEG decodes scaled in the decoder, and the result is the resize's size")
    func decodesScaled() throws {
        let data = try jpeg(width: 1600, height: 1200)
        let downsample = ImageProcessors.Downsample(width: 150, height: 150)
        let decoded = try downsample.decode(data)
        // 1/8 is the smallest DCT scale that still covers 150x113: 200x150.
        #expect((decoded.width, decoded.height) == (200, 150))
        let thumbnail = try downsample.process(decoded)
        #expect((thumbnail.width, thumbnail.height) == (150, 113))
        // Close to the resize of the full decode (the decoder's scaling is an area average).
        let full = try ImageProcessors.Resize(width: 150, height: 150).process(try ImageDecoder.decode(data))
        #expect(ProcessorFixtures.psnr(thumbnail.pixels, full.pixels) >= 30)
        // A PNG cannot scale while decoding: full size, then the same resize.
        let png = try ImageEncoder.encode(try ImageDecoder.decode(data), as: .png)
        #expect(try downsample.decode(png).width == 1600)
    }

    @Test("an EXIF-turned photo is downsampled upright", .requiresTestData)
    func exifTurnedPhoto() throws {
        let data = try TestData.bytes("valid/jpeg/large/pixel3a_exif_rotated.jpg")
        let header = try ImageHeader(reading: data)
        #expect(header.orientation.swapsDimensions)
        let downsample = ImageProcessors.Downsample(width: 200, height: 200)
        let thumbnail = try downsample.process(try downsample.decode(data))
        let upright = header.displaySize
        #expect(
            thumbnail.height == 200
                && thumbnail.width == Int((200.0 * Double(upright.width) / Double(upright.height)).rounded()))
    }

    @Test("the manager decodes scaled when the first processor downsamples, and caches the variant")
    func managerDownsamples() async throws {
        let data = try jpeg(width: 1600, height: 1200)
        try await withManager { harness in
            harness.server.route("/big.jpg", .ok(data))
            let url = harness.url("/big.jpg")
            let request = try ImageRequest(url: url, processors: [.downsample(width: 150, height: 150)])
            let decoder = harness.manager.decoder(for: request)
            #expect(try decoder.decode(data).width == 200)

            let result = try await harness.manager.image(for: request)
            #expect((result.image.width, result.image.height) == (150, 113))
            let again = try await harness.manager.image(for: request)
            #expect(again.cacheType == .memory && again.image == result.image)
            #expect(harness.server.requestCount("/big.jpg") == 1)
        }
    }
}
