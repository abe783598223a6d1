import OspreyTesting
import Testing

@testable import OspreyCodecs

/// JPEG XL's two ways of giving less than a full decode: the JPEG a file was recompressed from, and previews of a
/// file still arriving.
@Suite(.requiresTestData) struct JXLReconstructionTests {
    @Test("a JPEG XL recompressed from a JPEG gives that JPEG back: a JPEG of the same picture; others give nil")
    func reconstruction() throws {
        let (manifest, all) = try JXLCorpusTests.entries()
        let entries = all.filter { $0.expected == .decodeOK && $0.details["jpeg_reconstruction"] == "1" }
        #expect(entries.count >= 4)
        for entry in entries {
            let bytes = try manifest.bytes(of: entry)
            #expect(bytes.withUnsafeBytes { JXLCoder.containsJPEGReconstruction($0) }, "\(entry.path)")
            let jpeg = try #require(try bytes.withUnsafeBytes { try JXLCoder.reconstructedJPEG(from: $0) })
            #expect(ImageFormat(sniffing: jpeg) == .jpeg, "\(entry.path)")
            let fromJPEG = try ImageDecoder.decode(jpeg)
            let fromJXL = try ImageDecoder.decode(bytes)
            #expect(fromJPEG.width == fromJXL.width && fromJPEG.height == fromJXL.height, "\(entry.path)")
            // libjxl renders the same coefficients with its own IDCT and chroma upsampling: within a level or two
            // (0.05–1.2 measured), except in a picture too small to have more than edges (3 × 3: 5.6).
            let difference = meanAbsoluteDifference(
                try fromJPEG.pixels.converted(to: .rgba8), try fromJXL.pixels.converted(to: .rgba8))
            #expect(difference < (min(fromJPEG.width, fromJPEG.height) >= 16 ? 2 : 8), "\(entry.path): \(difference)")
        }
        let plain = try TestData.bytes("valid/jxl/misc/progressive_ac.jxl")
        #expect(!plain.withUnsafeBytes { JXLCoder.containsJPEGReconstruction($0) })
        #expect(try plain.withUnsafeBytes { try JXLCoder.reconstructedJPEG(from: $0) } == nil)
    }

    @Test("a JPEG larger than the first buffer comes out whole, the buffer grown as libjxl asks")
    func reconstructionGrowsItsBuffer() throws {
        let bytes = try TestData.bytes("valid/jxl/conformance/bench_oriented_brg.jxl")
        let whole = try #require(try bytes.withUnsafeBytes { try JXLCoder.reconstructedJPEG(from: $0) })
        #expect(whole.count > 200_000)
        let grown = try bytes.withUnsafeBytes {
            try JXLCoder.reconstructedJPEG(from: $0, limits: DecodingOptions.Limits(), capacity: 1000)
        }
        #expect(grown == whole)  // eight doublings
    }

    @Test("reconstruction checks the declared size against the limits first")
    func reconstructionLimits() throws {
        let bytes = try TestData.bytes("valid/jxl/conformance/bench_oriented_brg.jxl")
        var limits = DecodingOptions.Limits()
        limits.maxPixelCount = 100_000  // the file is 500 × 606
        #expect {
            try bytes.withUnsafeBytes { try JXLCoder.reconstructedJPEG(from: $0, limits: limits) }
        } throws: { error in
            if case .tooManyPixels? = error as? CodecError { true } else { false }
        }
    }

    @Test("a JPEG XL cut short decodes, with partial images allowed, to the whole picture at lower detail")
    func partialImage() throws {
        let bytes = try TestData.bytes("valid/jxl/misc/progressive_ac.jxl")
        let full = try ImageDecoder.decode(bytes)
        let half = Array(bytes.prefix(bytes.count / 2))
        #expect {
            try ImageDecoder.decode(half)
        } throws: { error in
            if case .truncated? = error as? CodecError { true } else { false }
        }
        var options = DecodingOptions()
        options.allowsPartialImages = true
        let partial = try ImageDecoder.decode(half, options: options)
        #expect(partial.width == full.width && partial.height == full.height)
        let difference = meanAbsoluteDifference(partial.pixels, full.pixels)
        // Not the final picture, nor an empty one: the same picture with less detail.
        #expect(difference > 0 && difference < 8, "\(difference)")
        let grey = try PixelBuffer(
            width: full.width, height: full.height, format: full.pixels.format,
            bytes: repeatElement(128, count: full.width * full.height * full.pixels.format.bytesPerPixel))
        #expect(meanAbsoluteDifference(grey, full.pixels) > 4 * difference)
    }

    @Test("an incremental decoder previews a JPEG XL as it arrives, and finishes with the full image")
    func previews() throws {
        let bytes = try TestData.bytes("valid/jxl/misc/progressive_ac.jxl")
        let decoder = IncrementalImageDecoder()
        let previews = IncrementalImageDecoderTests.feed(bytes, chunk: 32 << 10, to: decoder)
        let full = try decoder.finish()
        #expect(previews.count >= 3)
        for preview in previews {
            #expect(preview.width == full.width && preview.height == full.height)
        }
        // Later previews are closer to the final picture than the first.
        let first = meanAbsoluteDifference(previews[0].pixels, full.pixels)
        let last = meanAbsoluteDifference(previews[previews.count - 1].pixels, full.pixels)
        #expect(last < first, "\(first) → \(last)")
    }
}
