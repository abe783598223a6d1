import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// Decoding features checked on named corpus files.
@Suite(.requiresTestData) struct ImageDecoderFixtureTests {
    func decode(_ path: String, _ options: DecodingOptions = DecodingOptions()) throws -> Image {
        try ImageDecoder.decode(try TestData.bytes(path), options: options)
    }

    @Test("all eight EXIF orientations come out upright and alike", arguments: ["Landscape", "Portrait"])
    func orientationFixtures(set: String) throws {
        let reference = try decode("valid/jpeg/exif-orientation/\(set)_1.jpg")
        for orientation in 2...8 {
            let image = try decode("valid/jpeg/exif-orientation/\(set)_\(orientation).jpg")
            #expect(image.width == reference.width && image.height == reference.height)
            let difference = meanAbsoluteDifference(image.pixels, reference.pixels)
            #expect(difference < 6, "\(set)_\(orientation): mean difference \(difference)")
        }
        // Control: kept as stored, orientation 6 is sideways and differs.
        var keep = DecodingOptions()
        keep.keepsStoredOrientation = true
        let stored = try decode("valid/jpeg/exif-orientation/\(set)_6.jpg", keep)
        #expect(stored.orientation == .right)
        #expect(stored.width == reference.height && stored.height == reference.width)
    }

    @Test func pngEXIFOrientationsComeOutAlike() throws {
        let reference = try decode("valid/png/exif-orientation/coil-exif-1.png")
        for orientation in 2...8 {
            let image = try decode("valid/png/exif-orientation/coil-exif-\(orientation).png")
            #expect(image.width == reference.width && image.height == reference.height)
            #expect(meanAbsoluteDifference(image.pixels, reference.pixels) < 1, "coil-exif-\(orientation)")
        }
    }

    @Test func dctScalingReachesABudgetWithoutAFullDecode() throws {
        let path = "valid/jpeg/large/speed_bench_hv_subsampling.jpg"  // 7680×4320
        var options = DecodingOptions()
        options.pixelBudget = 1_000_000
        let budgeted = try decode(path, options)
        #expect(budgeted.width == 960 && budgeted.height == 540)  // 1/8
        options = DecodingOptions()
        options.targetSize = ImageSize(width: 1000, height: 500)
        let targeted = try decode(path, options)
        #expect(targeted.width == 1920 && targeted.height == 1080)  // 2/8: 1/8 would be narrower than 1000
        // A limit the full size breaks but the scaled size keeps is no obstacle.
        options.limits.maxPixelCount = 3_000_000
        #expect(try decode(path, options).width == 1920)
    }

    @Test func cmykAndGrayscaleJPEG() throws {
        let cmyk = try decode("valid/jpeg/cmyk/pil_sample_cmyk.jpg")
        #expect(cmyk.pixelFormat == .rgb8)
        let gray = try decode("valid/jpeg/grayscale/grayscale.jpeg")
        #expect(gray.pixelFormat == .gray8)
    }

    @Test func gifAnimationTiming() throws {
        let manifest = try TestData.manifest()
        let animated = manifest.entries.filter {
            $0.imageFormat == .gif && $0.expected == .decodeOK && $0.frames > 1 && $0.details["delays_cs"] != nil
        }
        #expect(!animated.isEmpty)
        for entry in animated {
            let image = try ImageDecoder.decode(try manifest.bytes(of: entry))
            let delays = image.frames.map { String(Int($0.duration / .milliseconds(1))) }
            // Delays of 10 ms or less play as 100 ms, as in browsers.
            let expected = (entry.details["delays_cs"] ?? "").split(separator: ":").map { Int($0) ?? 0 }
                .map { String($0 <= 1 ? 100 : $0 * 10) }
            #expect(delays == expected, "\(entry.path)")
            let loop = Int(entry.details["loop"] ?? "-1") ?? -1
            #expect(image.loopCount == (loop == -1 ? 1 : loop), "\(entry.path)")
        }
        var first = DecodingOptions()
        first.firstFrameOnly = true
        #expect(try ImageDecoder.decode(try manifest.bytes(of: animated[0]), options: first).frames.count == 1)
    }

    @Test func webpAnimationTiming() throws {
        let manifest = try TestData.manifest()
        let animated = manifest.entries.filter {
            $0.imageFormat == .webp && $0.expected == .decodeOK && $0.frames > 1 && $0.details["durations_ms"] != nil
        }
        #expect(!animated.isEmpty)
        for entry in animated {
            let image = try ImageDecoder.decode(try manifest.bytes(of: entry))
            let durations = image.frames.map { String(Int($0.duration / .milliseconds(1))) }.joined(separator: ",")
            #expect(
                durations == entry.details["durations_ms"]?.replacingOccurrences(of: ":", with: ","), "\(entry.path)")
            #expect(String(image.loopCount) == entry.details["loop"], "\(entry.path)")
        }
    }
}

/// Mean absolute difference per channel between two buffers of the same size and format.
func meanAbsoluteDifference(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    guard a.width == b.width, a.height == b.height, a.format == b.format else { return .infinity }
    let rowBytes = a.width * a.format.bytesPerPixel
    var total = 0
    a.withUnsafeBytes { one in
        b.withUnsafeBytes { two in
            for y in 0..<a.height {
                let (start, other) = (y * a.bytesPerRow, y * b.bytesPerRow)
                for x in 0..<rowBytes { total += abs(Int(one[start + x]) - Int(two[other + x])) }
            }
        }
    }
    return Double(total) / Double(rowBytes * a.height)
}
