import COspreyCodecShims
import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

/// The resize processor: the sizes each fit produces, the quality of its resampling against an exact reference, and
/// the properties that catch the classic resampling bugs (dark alpha fringes, half-pixel shifts).
@Suite("Resize")
struct ResizeTests {
    typealias Resize = ImageProcessors.Resize

    /// The output size of `resize` on a `width` × `height` image: planned, and for small images also produced.
    func size(_ resize: Resize, _ width: Int, _ height: Int) throws -> (Int, Int) {
        let planned = try resize.plan(sourceWidth: width, sourceHeight: height).map { ($0.width, $0.height) }
        guard width * height <= 1_000_000 else { return planned ?? (width, height) }
        let output = try resize.process(Image(pixels: try PixelBuffer(width: width, height: height, format: .rgb8)))
        #expect(planned ?? (width, height) == (output.width, output.height))
        return (output.width, output.height)
    }

    @Test("inside fits the box keeping the aspect ratio; one side given follows the aspect ratio")
    func insideSizes() throws {
        #expect(try size(Resize(width: 256, height: 256), 4000, 3000) == (256, 192))
        #expect(try size(Resize(width: 256, height: 256), 3000, 4000) == (192, 256))
        #expect(try size(Resize(width: 100, height: 400), 400, 200) == (100, 50))
        #expect(try size(Resize(width: 300), 600, 401) == (300, 201))
        #expect(try size(Resize(height: 50), 640, 480) == (67, 50))
        #expect(try size(Resize(width: 1, height: 1), 5000, 10) == (1, 1))
    }

    @Test("cover fills the box exactly, cropping around the anchor")
    func coverSizesAndAnchor() throws {
        #expect(try size(Resize(width: 100, height: 100, fit: .cover), 400, 200) == (100, 100))
        #expect(try size(Resize(width: 320, height: 180, fit: .cover), 1000, 1000) == (320, 180))
        // Left half red, right half blue: the left anchor keeps red, the right anchor blue, the centre both.
        let halves = try ProcessorFixtures.buffer(width: 200, height: 100, format: .rgb8) { x, _ in
            x < 100 ? [255, 0, 0] : [0, 0, 255]
        }
        let image = Image(pixels: halves)
        let left = try Resize(width: 50, height: 50, fit: .cover, anchor: .left).process(image)
        let right = try Resize(width: 50, height: 50, fit: .cover, anchor: .right).process(image)
        let center = try Resize(width: 50, height: 50, fit: .cover).process(image)
        #expect((0..<50).allSatisfy { ProcessorFixtures.pixel(left.pixels, $0, 25) == [255, 0, 0] })
        #expect((0..<50).allSatisfy { ProcessorFixtures.pixel(right.pixels, $0, 25) == [0, 0, 255] })
        #expect(ProcessorFixtures.pixel(center.pixels, 5, 25) == [255, 0, 0])
        #expect(ProcessorFixtures.pixel(center.pixels, 44, 25) == [0, 0, 255])
    }

    @Test("fill stretches to exactly the box")
    func fillSizes() throws {
        #expect(try size(Resize(width: 300, height: 100, fit: .fill), 1000, 1000) == (300, 100))
        #expect(try size(Resize(width: 64, height: 64, fit: .fill), 640, 480) == (64, 64))
    }

    @Test("a smaller image is never enlarged unless asked")
    func noUpscale() throws {
        let image = Image(pixels: try ProcessorFixtures.picture(width: 40, height: 30))
        #expect(try Resize(width: 400, height: 400).process(image) == image)
        #expect(try Resize(width: 400).process(image) == image)
        #expect(try size(Resize(width: 400, height: 10, fit: .fill), 40, 30) == (40, 10))
        // cover keeps the box's shape at the source's scale: a 2:1 box on a 40x30 image is a 40x20 crop.
        #expect(try size(Resize(width: 400, height: 200, fit: .cover), 40, 30) == (40, 20))
        #expect(try size(Resize(width: 80, height: 80, upscale: true), 40, 30) == (80, 60))
        #expect(try size(Resize(width: 80, height: 80, fit: .cover, upscale: true), 40, 30) == (80, 80))
    }

    @Test("a resize without a size, or with a size that is not positive, throws")
    func invalidSizes() throws {
        let image = Image(pixels: try PixelBuffer(width: 4, height: 4, format: .rgb8))
        #expect(throws: ImageProcessingError.self) { try Resize().process(image) }
        #expect(throws: ImageProcessingError.self) { try Resize(width: 0, height: 10).process(image) }
        #expect(throws: ImageProcessingError.self) { try Resize(width: -5).process(image) }
    }

    @Test("an empty source plans to an error, never to a 1x1 enlargement", arguments: [(0, 0), (0, 10), (10, 0)])
    func emptySource(width: Int, height: Int) {
        for resize in [Resize(width: 150, height: 150), Resize(width: 150), Resize(height: 80, fit: .cover)] {
            #expect(throws: ImageProcessingError.self) { try resize.plan(sourceWidth: width, sourceHeight: height) }
        }
    }

    @Test(
        "Lanczos-3 is within 35 dB PSNR of an exact two-dimensional reference, shrinking and enlarging",
        arguments: [(640, 480, 200, 150), (500, 333, 97, 211), (60, 40, 150, 100)])
    func lanczosMatchesTheReference(sourceWidth: Int, sourceHeight: Int, width: Int, height: Int) throws {
        let source = try ProcessorFixtures.picture(width: sourceWidth, height: sourceHeight)
        let ours = try Resize(width: width, height: height, fit: .fill, upscale: true).process(Image(pixels: source))
        let reference = try ReferenceResize.lanczos3(source, width: width, height: height)
        let psnr = ProcessorFixtures.psnr(ours.pixels, reference)
        #expect(psnr >= 35, "PSNR \(psnr) dB")
    }

    @Test(
        "the four-lane and the wider loops resize to the same bytes, in every pixel format, shrinking and enlarging",
        arguments: [PixelFormat.gray8, .grayAlpha8, .rgb8, .rgba8])
    func everyVectorWidthGivesTheSameBytes(format: PixelFormat) throws {
        // Noise, and alpha that varies, so that any difference in the order of the sums would show in some byte.
        var state: UInt32 = 2_463_534_242
        let source = try ProcessorFixtures.buffer(width: 333, height: 211, format: format) { _, _ in
            (0..<format.bytesPerPixel).map { _ in
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                return UInt8(truncatingIfNeeded: state)
            }
        }
        for (width, height) in [(128, 77), (41, 200), (501, 317), (7, 3)] {
            let resize = Resize(width: width, height: height, fit: .fill, upscale: true, reducingGap: nil)
            osprey_resample_limit_lanes(4)
            let four = try resize.process(Image(pixels: source))
            osprey_resample_limit_lanes(0)
            let widest = try resize.process(Image(pixels: source))
            #expect(four.pixels == widest.pixels, "\(format) to \(width)x\(height)")
            #expect(four.width == width && four.height == height)
        }
    }

    @Test(
        "every filter keeps a flat image flat, and an interpolating one keeps the same size the same pixels",
        arguments: ResamplingFilter.allCases)
    func flatStaysFlat(filter: ResamplingFilter) throws {
        let flat = try ProcessorFixtures.buffer(width: 97, height: 61, format: .rgba8) { _, _ in [90, 160, 220, 255] }
        let resized = try Resize(width: 40, height: 33, fit: .fill, filter: filter).process(Image(pixels: flat))
        for y in 0..<resized.height {
            #expect(resized.pixels.row(y) == Array(repeating: [90, 160, 220, 255], count: 40).flatMap { $0 })
        }
        // Mitchell (B = 1/3) is not interpolating: it softens even at scale 1, by design.
        guard filter != .mitchell else { return }
        let picture = try ProcessorFixtures.picture(width: 31, height: 17)
        let same = try Resampler(
            filter: filter, sourceWidth: 31, sourceHeight: 17, rect: PixelRect(x: 0, y: 0, width: 31, height: 17),
            width: 31, height: 17
        ).resample(picture)
        #expect(same == picture)
    }

    @Test("no half-pixel shift: a checkerboard of 2-pixel squares halved with the box filter is a 1-pixel one")
    func checkerboardKeepsItsPhase() throws {
        let board = try ProcessorFixtures.buffer(width: 64, height: 48, format: .gray8) { x, y in
            [(x / 2 + y / 2) % 2 == 0 ? 255 : 0]
        }
        let halved = try Resize(width: 32, height: 24, fit: .fill, filter: .box).process(Image(pixels: board))
        for y in 0..<24 {
            #expect(halved.pixels.row(y) == (0..<32).map { x in (x + y) % 2 == 0 ? 255 : 0 })
        }
        // Doubled with the box filter (nearest neighbour), each pixel becomes a 2x2 square in place.
        let small = try ProcessorFixtures.buffer(width: 5, height: 3, format: .gray8) { x, y in [UInt8(x * 40 + y)] }
        let doubled = try Resize(width: 10, height: 6, fit: .fill, filter: .box, upscale: true)
            .process(Image(pixels: small))
        for y in 0..<6 {
            #expect(doubled.pixels.row(y) == (0..<10).map { x in UInt8(x / 2 * 40 + y / 2) })
        }
    }

    @Test("transparent neighbours do not darken edges: alpha is premultiplied")
    func noDarkFringes() throws {
        // An opaque orange square on transparent black, as a PNG decoded for real.
        let square = try ProcessorFixtures.buffer(width: 80, height: 80, format: .rgba8) { x, y in
            (20..<60).contains(x) && (20..<60).contains(y) ? [255, 160, 20, 255] : [0, 0, 0, 0]
        }
        let png = try ImageEncoder.encode(Image(pixels: square), as: .png)
        let decoded = try ImageDecoder.decode(png)
        for filter in ResamplingFilter.allCases {
            let small = try Resize(width: 23, height: 23, filter: filter).process(decoded).pixels
            // Filters with negative lobes ring at a hard edge (a few levels of overshoot); unpremultiplied
            // darkening would instead pull a half-covered pixel's colour halfway to black.
            let tolerance = filter == .lanczos3 || filter == .mitchell ? 16 : 3
            var edgePixels = 0
            for y in 0..<small.height {
                for x in 0..<small.width {
                    let p = ProcessorFixtures.pixel(small, x, y)
                    guard p[3] > 0 else { continue }
                    if p[3] < 255 { edgePixels += 1 }
                    let off = zip(p.prefix(3), [255, 160, 20]).map { abs(Int($0) - $1) }.max()!
                    #expect(off <= tolerance, "\(filter) (\(x), \(y)): \(p)")
                }
            }
            #expect(edgePixels > 0, "\(filter): the edge should be partly transparent")
        }
    }

    @Test("every frame of an animation is resized, durations and loop count kept")
    func animatedFrames() throws {
        let frames = try (0..<3).map { index in
            ImageFrame(
                pixels: try ProcessorFixtures.buffer(width: 40, height: 20, format: .rgba8) { _, _ in
                    [UInt8(index * 80), 0, 0, 255]
                }, duration: .milliseconds(50 * (index + 1)))
        }
        let image = try Image(frames: frames, loopCount: 3, sourceFormat: .gif)
        let resized = try ImageProcessors.Resize(width: 10).process(image)
        #expect(resized.frames.count == 3)
        #expect(resized.frames.map(\.duration) == [.milliseconds(50), .milliseconds(100), .milliseconds(150)])
        #expect(resized.loopCount == 3 && resized.sourceFormat == .gif)
        #expect(resized.frames.allSatisfy { $0.pixels.width == 10 && $0.pixels.height == 5 })
        #expect(resized.frames.map { ProcessorFixtures.pixel($0.pixels, 4, 2)[0] } == [0, 80, 160])
    }

    @Test("an image kept in its stored orientation is turned upright before it is resized")
    func uprightFirst() throws {
        let stored = try ProcessorFixtures.buffer(width: 40, height: 20, format: .rgb8) { _, _ in [10, 20, 30] }
        let image = Image(pixels: stored, orientation: .right)
        let resized = try Resize(width: 10).process(image)
        #expect((resized.width, resized.height) == (10, 20))
        #expect(resized.orientation == .up)
    }

    @Test("a cancelled task stops a large resize")
    func cancellation() async throws {
        let big = Image(pixels: try PixelBuffer(width: 2000, height: 2000, format: .rgb8))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try Resize(width: 100).process(big)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
