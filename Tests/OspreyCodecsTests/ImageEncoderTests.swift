import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct ImageEncoderTests {
    /// A 37×23 test pattern in `format`: gradients, a hard edge, and (with alpha) transparent and half-transparent
    /// areas.
    static func pattern(_ format: PixelFormat) throws -> PixelBuffer {
        let (width, height) = (37, 23)
        var rgba: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let alpha: UInt8 = x < 5 ? 0 : (x < 10 ? 128 : 255)
                rgba += [UInt8(x * 255 / (width - 1)), UInt8(y * 255 / (height - 1)), x > width / 2 ? 230 : 20, alpha]
            }
        }
        return try PixelBuffer(width: width, height: height, format: .rgba8, bytes: rgba).converted(to: format)
    }

    @Test("PNG round trips are bit-exact", arguments: PixelFormat.allCases)
    func pngIsExact(format: PixelFormat) throws {
        let image = Image(pixels: try Self.pattern(format))
        for level in [0, 6, 9] {
            var options = EncodingOptions()
            options.pngCompressionLevel = level
            let encoded = try ImageEncoder.encode(image, as: .png, options: options)
            #expect(ImageFormat(sniffing: encoded) == .png)
            let decoded = try ImageDecoder.decode(encoded)
            #expect(decoded.pixels == image.pixels)
        }
    }

    @Test("lossless WebP round trips are bit-exact", arguments: [PixelFormat.rgb8, .rgba8])
    func losslessWebPIsExact(format: PixelFormat) throws {
        let image = Image(pixels: try Self.pattern(format))
        var options = EncodingOptions()
        options.isLossless = true
        let decoded = try ImageDecoder.decode(try ImageEncoder.encode(image, as: .webp, options: options))
        #expect(decoded.pixels == image.pixels)
    }

    @Test func jpegOptionsShapeTheFile() throws {
        let image = Image(pixels: try Self.pattern(.rgb8))
        var options = EncodingOptions()
        options.quality = 95
        let baseline = try ImageEncoder.encode(image, as: .jpeg, options: options)
        options.isProgressive = true
        let progressive = try ImageEncoder.encode(image, as: .jpeg, options: options)
        #expect(baseline.contains(0xC0) && baseline.firstRange(of: [0xFF, 0xC2]) == nil)
        #expect(progressive.firstRange(of: [0xFF, 0xC2]) != nil)
        options.isProgressive = false
        options.chromaSubsampling = .yuv444
        let full = try ImageDecoder.decode(try ImageEncoder.encode(image, as: .jpeg, options: options))
        #expect(psnr(full.pixels, image.pixels) > 35)
        // Lower quality, smaller file.
        #expect(try ImageEncoder.encode(image, as: .jpeg, quality: 20).count < baseline.count)
    }

    @Test func jpegFlattensAlphaOverTheBackground() throws {
        let transparent = try PixelBuffer(
            width: 16, height: 16, format: .rgba8, bytes: [UInt8](repeating: 0, count: 1024))
        var options = EncodingOptions()
        options.background = .init(red: 255, green: 0, blue: 0)
        let decoded = try ImageDecoder.decode(
            try ImageEncoder.encode(Image(pixels: transparent), as: .jpeg, options: options))
        #expect(decoded.pixelFormat == .rgb8)
        let pixel = Array(decoded.pixels.row(8)[24..<27])
        #expect(pixel[0] > 240 && pixel[1] < 15 && pixel[2] < 15)
        let gray = try ImageDecoder.decode(
            try ImageEncoder.encode(Image(pixels: try Self.pattern(.gray8)), as: .jpeg, quality: 90))
        #expect(gray.pixelFormat == .gray8)
    }

    @Test func gifQuantisesAndKeepsTransparency() throws {
        let image = Image(pixels: try Self.pattern(.rgba8))
        let decoded = try ImageDecoder.decode(try ImageEncoder.encode(image, as: .gif, quality: 0))
        #expect(decoded.frames.count == 1)
        #expect(decoded.width == 37 && decoded.height == 23)
        let row = decoded.pixels.row(10)
        #expect(row[3] == 0)  // x = 0: transparent
        #expect(row[20 * 4 + 3] == 255)  // x = 20: opaque
        let opaque = try ImageDecoder.decode(
            try ImageEncoder.encode(Image(pixels: try Self.pattern(.rgb8)), as: .gif, quality: 0))
        // 851 colours in 256 (giflib's median cut works on 5 bits per channel).
        #expect(psnr(try opaque.pixels.converted(to: .rgb8), try Self.pattern(.rgb8)) > 25)
    }

    @Test("GIF encodes running at once each give the bytes one alone gives")
    func concurrentGIFEncodesAgree() async throws {
        // giflib's median cut sorts with a comparator that reads a global (the axis being split): two quantisations
        // at once used to see each other's axis and pick other palettes.
        let image = Image(pixels: try Self.pattern(.rgb8))
        let alone = try ImageEncoder.encode(image, as: .gif, quality: 0)
        let differing = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<25).count { _ in (try? ImageEncoder.encode(image, as: .gif, quality: 0)) != alone }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(differing == 0)
    }

    @Test("animations keep frames, durations and loop count", arguments: [ImageFormat.gif, .webp])
    func animationsRoundTrip(format: ImageFormat) throws {
        let frames = try (0..<4).map { index throws -> ImageFrame in
            var pixels = try Self.pattern(.rgba8)
            // A visible change in an opaque area: libwebp merges frames that do not change.
            pixels.withUnsafeMutableBytes { $0[(20 + index) * 4] = 7 }
            return ImageFrame(pixels: pixels, duration: .milliseconds(100 * (index + 1)))
        }
        for loopCount in [0, 1, 3] {
            let image = try Image(frames: frames, loopCount: loopCount)
            let decoded = try ImageDecoder.decode(try ImageEncoder.encode(image, as: format, quality: 90))
            #expect(decoded.frames.count == 4)
            #expect(decoded.frames.map(\.duration) == frames.map(\.duration))
            #expect(decoded.loopCount == loopCount)
        }
    }

    @Test func encodingTurnsAKeptOrientationUpright() throws {
        let stored = try PixelBuffer(width: 2, height: 1, format: .gray8, bytes: [10, 200])
        let image = Image(pixels: stored, orientation: .right)
        let decoded = try ImageDecoder.decode(try ImageEncoder.encode(image, as: .png))
        #expect(decoded.width == 1 && decoded.height == 2)
        #expect(decoded.pixels.row(0) == [10] && decoded.pixels.row(1) == [200])
    }

    @Test func unknownFormatCannotBeEncoded() throws {
        #expect(throws: CodecError.unsupportedFormat) {
            try ImageEncoder.encode(Image(pixels: try Self.pattern(.rgb8)), as: .unknown)
        }
    }
}

@Suite(.requiresTestData) struct ImageEncoderCorpusTests {
    static let photos = [
        "valid/jpeg/photos/kingfisher-1.jpg", "valid/jpeg/photos/kingfisher-10.jpg", "valid/jpeg/baseline/fixture.jpeg",
        "valid/jpeg/large/pixel3a_exif_rotated.jpg",
    ]

    @Test(
        "JPEG, lossy WebP, AVIF and JPEG XL at quality 90 reach 38 dB on photos",
        arguments: [ImageFormat.jpeg, .webp, .avif, .jxl])
    func lossyQuality(format: ImageFormat) throws {
        for path in Self.photos {
            let photo = try ImageDecoder.decode(try TestData.bytes(path))
            let decoded = try ImageDecoder.decode(try ImageEncoder.encode(photo, as: format, quality: 90))
            let value = psnr(try decoded.pixels.converted(to: .rgb8), try photo.pixels.converted(to: .rgb8))
            #expect(value >= 38, "\(path) as \(format): \(value) dB")
        }
    }

    @Test("corpus animations keep frame count and durations", arguments: [ImageFormat.gif, .webp])
    func corpusAnimations(format: ImageFormat) throws {
        let manifest = try TestData.manifest()
        let sources = manifest.entries.filter { $0.imageFormat == format && $0.expected == .decodeOK && $0.frames > 1 }
        for entry in sources.prefix(6) {
            let image = try ImageDecoder.decode(try manifest.bytes(of: entry))
            let decoded = try ImageDecoder.decode(try ImageEncoder.encode(image, as: format, quality: 80))
            #expect(decoded.frames.count == image.frames.count, "\(entry.path)")
            #expect(decoded.frames.map(\.duration) == image.frames.map(\.duration), "\(entry.path)")
        }
    }
}

/// Peak signal-to-noise ratio in dB between two buffers of the same size and format (infinity when identical).
func psnr(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    guard a.width == b.width, a.height == b.height, a.format == b.format else { return 0 }
    var squared = 0.0
    for y in 0..<a.height {
        for (x, z) in zip(a.row(y), b.row(y)) {
            let d = Double(Int(x) - Int(z))
            squared += d * d
        }
    }
    let mse = squared / Double(a.width * a.height * a.format.bytesPerPixel)
    return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
}
