import Foundation
import OspreyTesting
import Testing

@testable import OspreyCodecs

@Suite struct IncrementalImageDecoderTests {
    /// A 256×256 photo-like pattern (smooth gradients with texture), so that each scan adds visible detail.
    static func photo() throws -> Image {
        var rgba: [UInt8] = []
        for y in 0..<256 {
            for x in 0..<256 {
                rgba += [UInt8(x), UInt8(y), UInt8((x * y / 7 + (x ^ y)) & 0xFF), 255]
            }
        }
        return Image(pixels: try PixelBuffer(width: 256, height: 256, format: .rgba8, bytes: rgba))
    }

    /// Feeds `bytes` in chunks of `chunk` bytes, asking for a preview after each, and returns the previews.
    static func feed(_ bytes: [UInt8], chunk: Int, to decoder: IncrementalImageDecoder) -> [Image] {
        var previews: [Image] = []
        for start in stride(from: 0, to: bytes.count, by: chunk) {
            decoder.append(bytes[start..<min(start + chunk, bytes.count)])
            if let preview = decoder.makePreview() { previews.append(preview) }
        }
        return previews
    }

    @Test func progressiveJPEGPreviewsAfterEachCompletedScan() throws {
        var options = EncodingOptions()
        options.isProgressive = true
        options.quality = 90
        let jpeg = try ImageEncoder.encode(try Self.photo(), as: .jpeg, options: options)
        let scans = jpeg.withUnsafeBytes { JPEGScanCounter.count(in: $0) }
        #expect(scans.isProgressive)
        #expect(scans.completed >= 6)  // libjpeg-turbo's default progressive script

        let decoder = IncrementalImageDecoder()
        let previews = Self.feed(jpeg, chunk: 256, to: decoder)
        // One preview per completed scan at most (the last scan completes only with the final bytes).
        #expect(previews.count >= 3)
        #expect(previews.count <= scans.completed)
        #expect(previews.allSatisfy { $0.width == 256 && $0.height == 256 })
        let final = try decoder.finish()
        #expect(final == (try ImageDecoder.decode(jpeg)))
        // Each preview is closer to the final image than the one before.
        let errors = previews.map { meanAbsoluteDifference($0.pixels, final.pixels) }
        #expect(errors.first! > errors.last!)
    }

    @Test func theScanCounterResumesWhereItStopped() throws {
        var options = EncodingOptions()
        options.isProgressive = true
        let jpeg = try ImageEncoder.encode(try Self.photo(), as: .jpeg, options: options)
        let whole = jpeg.withUnsafeBytes { JPEGScanCounter.count(in: $0) }
        // Walking a growing prefix, 100 bytes more each time, ends where one walk over everything does.
        var counter = JPEGScanCounter()
        for end in stride(from: 100, through: jpeg.count + 99, by: 100) {
            jpeg.prefix(end).withUnsafeBytes { counter.advance(over: $0) }
        }
        #expect(counter.isProgressive == whole.isProgressive)
        #expect(counter.completed == whole.completed)
    }

    @Test func pngPreviewsShowTheRowsThatArrived() throws {
        let png = SyntheticImages.png(width: 512, height: 512)
        let decoder = IncrementalImageDecoder()
        let previews = Self.feed(png, chunk: 32 << 10, to: decoder)
        #expect(previews.count >= 3)
        let final = try decoder.finish()
        let first = try #require(previews.first)
        #expect(first.pixels.row(0) == final.pixels.row(0))
        #expect(first.pixels.row(511).allSatisfy { $0 == 0 })
    }

    @Test func webpPreviews() throws {
        let webp = try ImageEncoder.encode(try Self.photo(), as: .webp, quality: 90)
        let decoder = IncrementalImageDecoder()
        let previews = Self.feed(webp, chunk: 2048, to: decoder)
        #expect(!previews.isEmpty)
        #expect(try decoder.finish() == (try ImageDecoder.decode(webp)))
    }

    @Test func nothingNewMeansNoPreview() throws {
        let png = SyntheticImages.png(width: 256, height: 256)
        let decoder = IncrementalImageDecoder()
        decoder.append(png.prefix(100_000))
        #expect(decoder.makePreview() != nil)
        // The same bytes again: nothing new to show.
        #expect(decoder.makePreview() == nil)
        decoder.append(png[100_000..<100_100])
        #expect(decoder.makePreview() == nil)
        // Not an image yet.
        let text = IncrementalImageDecoder()
        text.append(Array("<html>".utf8))
        #expect(text.makePreview() == nil)
    }

    @Test func onePreviewAtATimeAndTheFinalDecodeNeverWaits() async throws {
        let png = SyntheticImages.png(width: 256, height: 256)
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let decoder = IncrementalImageDecoder(options: DecodingOptions()) {
            (data: [UInt8], options: DecodingOptions) throws(CodecError) -> Image in
            if options.allowsPartialImages {  // a preview: hold it until the test releases it
                entered.signal()
                release.wait()
            }
            return try ImageDecoder.decode(data, options: options)
        }
        decoder.append(png.prefix(120_000))
        // Given a preview decode in flight on another thread
        let previewing = Thread { _ = decoder.makePreview() }
        previewing.start()
        entered.wait()
        // When more data arrives, Then no second preview starts
        decoder.append(png.dropFirst(120_000))
        #expect(decoder.makePreview() == nil)
        // And the final decode completes without waiting for the preview.
        let final = try decoder.finish()
        #expect(final.width == 256)
        release.signal()
    }
}
