import OspreyCodecs
import OspreyTesting
import Testing

/// ``ImageDecoder/memoryEstimate(for:options:)`` against what decoding really produces: the memory budget admits
/// decodes by it, so its pixel count must be exact.
@Suite struct DecodingEstimateTests {
    @Test(
        "the estimate's image bytes, size, channels and frames are the decode's, on every decode-ok corpus file",
        .requiresTestData)
    func exactOnTheCorpus() async throws {
        try await onOwnThread { try Self.checkTheCorpus() }
    }

    static func checkTheCorpus() throws {
        let manifest = try TestData.manifest()
        var scaled = DecodingOptions()
        scaled.targetSize = ImageSize(width: 64, height: 48)
        var firstFrame = DecodingOptions()
        firstFrame.firstFrameOnly = true
        var stored = DecodingOptions()
        stored.keepsStoredOrientation = true
        var checked = 0
        for entry in manifest.entries where entry.expected == .decodeOK {
            let bytes = try manifest.bytes(of: entry)
            for options in [DecodingOptions(), scaled, firstFrame, stored] {
                let image = try ImageDecoder.decode(bytes, options: options)
                let estimate = try ImageDecoder.memoryEstimate(for: bytes, options: options)
                let decodedBytes = image.frames.reduce(0) { $0 + $1.pixels.byteCount }
                #expect(estimate.imageBytes == decodedBytes, "\(entry.path) \(options)")
                #expect(estimate.frameCount == image.frames.count, "\(entry.path)")
                #expect(estimate.channels == image.pixelFormat.bytesPerPixel, "\(entry.path)")
                #expect(estimate.peakBytes >= estimate.imageBytes)
                checked += 1
            }
        }
        #expect(checked == 790 * 4)
    }

    @Test func aProgressiveJPEGCountsItsCoefficientsAndAnOrientationItsTurnedCopy() throws {
        let pixels = try PixelBuffer(
            width: 320, height: 240, format: .rgb8, bytes: (0..<(320 * 240 * 3)).map { UInt8(truncatingIfNeeded: $0) })
        let image = Image(pixels: pixels)
        var options = EncodingOptions()
        options.isProgressive = true
        let progressive = try ImageEncoder.encode(image, as: .jpeg, options: options)
        let estimate = try ImageDecoder.memoryEstimate(for: progressive)
        #expect(estimate.imageBytes == 320 * 240 * 3)
        // Three components of 40 × 30 blocks of 64 two-byte coefficients, at least (4:2:0 chroma is less).
        #expect(estimate.peakBytes > estimate.imageBytes + 40 * 30 * 128)
        // At 1/8 the image is 40 × 30, the coefficient arrays are still whole, and the copy of the file without the
        // AC scans is counted (twice the file's size).
        var eighth = DecodingOptions()
        eighth.targetSize = ImageSize(width: 1, height: 1)
        let small = try ImageDecoder.memoryEstimate(for: progressive, options: eighth)
        #expect(small.width == 40 && small.height == 30 && small.imageBytes == 40 * 30 * 3)
        #expect(small.peakBytes - small.imageBytes == estimate.peakBytes - estimate.imageBytes + 2 * progressive.count)
        // A partial decode reads the file as it is.
        eighth.allowsPartialImages = true
        let partial = try ImageDecoder.memoryEstimate(for: progressive, options: eighth)
        #expect(partial.peakBytes - partial.imageBytes == estimate.peakBytes - estimate.imageBytes)
    }

    /// A sequential JPEG's scan is unstuffed into a buffer of its own for the Huffman decoder (the file's size at
    /// most); decoded at 1/8 it reads a copy whose full-resolution blocks keep their DC coefficient alone, made beside
    /// the file, whose scan is the one unstuffed: twice the file's size.
    @Test func aSequentialJPEGCountsItsUnstuffedScanAndAtOneEighthTheCopyItReads() throws {
        let pixels = try PixelBuffer(
            width: 320, height: 240, format: .rgb8, bytes: (0..<(320 * 240 * 3)).map { UInt8(truncatingIfNeeded: $0) })
        let sequential = try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg)
        let full = try ImageDecoder.memoryEstimate(for: sequential)
        #expect(full.peakBytes == full.imageBytes + sequential.count)
        var eighth = DecodingOptions()
        eighth.targetSize = ImageSize(width: 40, height: 30)
        let small = try ImageDecoder.memoryEstimate(for: sequential, options: eighth)
        #expect(small.imageBytes == 40 * 30 * 3)
        #expect(small.peakBytes == small.imageBytes + 2 * sequential.count)
        var quarter = DecodingOptions()
        quarter.targetSize = ImageSize(width: 41, height: 30)
        let larger = try ImageDecoder.memoryEstimate(for: sequential, options: quarter)
        #expect(larger.width == 80 && larger.peakBytes == larger.imageBytes + sequential.count)
    }

    @Test("a CMYK JPEG with a profile counts the stored CMYK pixels it converts from", .requiresTestData)
    func aProfiledCMYKJPEGCountsItsStoredPixels() throws {
        let bytes = try TestData.bytes("valid/colour/cmyk-icc.jpg")
        let estimate = try ImageDecoder.memoryEstimate(for: bytes)
        let image = try ImageDecoder.decode(bytes)
        #expect(estimate.imageBytes == image.pixels.byteCount)
        #expect(estimate.peakBytes >= estimate.imageBytes + image.width * image.height * 4)
        var ignoring = DecodingOptions()
        ignoring.colorHandling = .ignore
        // Without the profile, libjpeg converts to RGB row by row: beside the pixels, the (sequential) file's scan
        // unstuffed for the Huffman decoder alone.
        #expect(
            try ImageDecoder.memoryEstimate(for: bytes, options: ignoring).peakBytes
                == estimate.imageBytes + bytes.count)
    }

    @Test func aHeaderThatCannotBeReadIsAnError() {
        #expect(throws: CodecError.self) { try ImageDecoder.memoryEstimate(for: Array("not an image".utf8)) }
    }
}
