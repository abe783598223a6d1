import OspreyTesting
import Testing

@testable import OspreyCodecs

/// AVIF (libaom through libavif) and JPEG XL (libjxl) written by ``ImageEncoder`` and read back by ``ImageDecoder``.
struct AVIFEncoderTests {
    @Test(
        "lossless AVIF and JPEG XL round trips are bit-exact, with and without alpha",
        arguments: [ImageFormat.avif, .jxl], [PixelFormat.rgb8, .rgba8])
    func losslessIsExact(output: ImageFormat, format: PixelFormat) throws {
        let pixels = try ImageEncoderTests.pattern(format)
        var options = EncodingOptions()
        options.isLossless = true
        let encoded = try ImageEncoder.encode(Image(pixels: pixels), as: output, options: options)
        #expect(ImageFormat(sniffing: encoded) == output)
        let decoded = try ImageDecoder.decode(encoded)
        #expect(decoded.pixelFormat == format)
        #expect(decoded.pixels == pixels)
    }

    @Test("gray is written as RGB, alpha is kept, and the subsampling asked for is what the file says")
    func grayAlphaAndSubsampling() throws {
        let gray = try ImageDecoder.decode(
            try ImageEncoder.encode(Image(pixels: try ImageEncoderTests.pattern(.gray8)), as: .avif, quality: 95))
        #expect(gray.pixelFormat == .rgb8)
        #expect(psnr(gray.pixels, try ImageEncoderTests.pattern(.gray8).converted(to: .rgb8)) > 35)
        let translucent = try ImageDecoder.decode(
            try ImageEncoder.encode(Image(pixels: try ImageEncoderTests.pattern(.rgba8)), as: .avif, quality: 90))
        let row = translucent.pixels.row(10)
        #expect(row[3] < 8 && abs(Int(row[7 * 4 + 3]) - 128) < 8 && row[20 * 4 + 3] > 247)
        var sizes: [Int] = []
        for subsampling in [EncodingOptions.ChromaSubsampling.yuv444, .yuv420] {
            var options = EncodingOptions()
            options.quality = 60
            options.chromaSubsampling = subsampling
            sizes.append(
                try ImageEncoder.encode(
                    Image(pixels: try ImageEncoderTests.pattern(.rgb8)), as: .avif, options: options
                ).count)
        }
        // Full-resolution colour costs bytes at the same quality.
        #expect(sizes[0] > sizes[1])
    }

    /// AVIF plays forever (libavif 0.11 writes no edit list); JPEG XL keeps the loop count.
    @Test(
        "an animation keeps its frames and their durations, and in JPEG XL its loop count",
        arguments: [(ImageFormat.avif, 0), (.jxl, 3)])
    func animationKeepsFramesAndDurations(output: ImageFormat, loops: Int) throws {
        let durations: [Duration] = [.milliseconds(100), .milliseconds(250), .milliseconds(40)]
        let frames = try durations.enumerated().map { index, duration in
            var pixels = try ImageEncoderTests.pattern(.rgb8)
            pixels.withUnsafeMutableBytes { $0[0] = UInt8(index * 100) }
            return ImageFrame(pixels: pixels, duration: duration)
        }
        let image = try Image(frames: frames, loopCount: 3, orientation: .up, sourceFormat: .unknown)
        let decoded = try ImageDecoder.decode(try ImageEncoder.encode(image, as: output, quality: 80))
        #expect(decoded.frames.count == 3)
        #expect(decoded.frames.map(\.duration) == durations)
        #expect(decoded.loopCount == loops)
    }

    @Test("a kept colour profile is embedded and read back")
    func profileIsKept() throws {
        var keep = DecodingOptions()
        keep.colorHandling = .keepProfile
        let tagged = try ImageDecoder.decode(
            try TestData.bytes("valid/png/color-and-metadata/gradient-8b-displayp3-alpha.png"), options: keep)
        let profile = try #require(tagged.colorProfile)
        let decoded = try ImageDecoder.decode(try ImageEncoder.encode(tagged, as: .avif, quality: 80), options: keep)
        #expect(decoded.colorProfile?.data == profile.data)
    }
}

@Suite(.requiresTestData) struct AVIFEncoderCorpusTests {
    @Test("GIF and WebP animations of the corpus keep frame count and durations as AVIF")
    func corpusAnimations() throws {
        let manifest = try TestData.manifest()
        let sources = manifest.entries.filter {
            [.gif, .webp].contains($0.imageFormat) && $0.expected == .decodeOK && $0.frames > 1
        }
        for entry in sources.prefix(4) {
            let image = try ImageDecoder.decode(try manifest.bytes(of: entry))
            let decoded = try ImageDecoder.decode(try ImageEncoder.encode(image, as: .avif, quality: 60))
            #expect(decoded.frames.count == image.frames.count, "\(entry.path)")
            #expect(decoded.frames.map(\.duration) == image.frames.map(\.duration), "\(entry.path)")
        }
    }
}

/// JPEG XL's quality scale (``JXLEncoder/distance(forQuality:)``).
struct JXLEncoderTests {
    @Test("quality maps to a distance continuously, 0.55 at 90, from 0.1 at 100 to 25 at 0")
    func qualityMapsToDistance() {
        #expect(abs(JXLEncoder.distance(forQuality: 90) - 0.55) < 1e-6)
        #expect(abs(JXLEncoder.distance(forQuality: 100) - 0.1) < 1e-6)
        #expect(abs(JXLEncoder.distance(forQuality: 0) - 25) < 1e-4)
        let distances = (0...100).map { JXLEncoder.distance(forQuality: $0) }
        // Falling with quality, without a jump anywhere.
        #expect(zip(distances, distances.dropFirst()).allSatisfy { $0 > $1 && $0 - $1 < 0.8 })
    }
}
