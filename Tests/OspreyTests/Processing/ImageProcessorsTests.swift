import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

/// The other built-in processors, their identifiers and their composition.
@Suite("ImageProcessors")
struct ImageProcessorsTests {
    /// 3 × 2, every pixel different: (x, y) holds [x, y, 7, 255].
    let grid: PixelBuffer

    init() throws {
        grid = try ProcessorFixtures.buffer(width: 3, height: 2) { x, y in [UInt8(x), UInt8(y), 7, 255] }
    }

    func cells(_ image: Image) -> [[Int]] {
        (0..<image.height).map { y in
            (0..<image.width).map { x in
                let p = ProcessorFixtures.pixel(image.pixels, x, y)
                return Int(p[0]) * 10 + Int(p[1])
            }
        }
    }

    // MARK: Geometry

    @Test("flip mirrors, rotate turns clockwise by quarter turns")
    func flipAndRotate() throws {
        let image = Image(pixels: grid)
        #expect(cells(image) == [[0, 10, 20], [1, 11, 21]])
        #expect(cells(try ImageProcessors.Flip().process(image)) == [[20, 10, 0], [21, 11, 1]])
        #expect(
            cells(try ImageProcessors.Flip(horizontally: false, vertically: true).process(image)) == [
                [1, 11, 21], [0, 10, 20],
            ])
        #expect(cells(try ImageProcessors.Rotate(quarterTurns: 1).process(image)) == [[1, 0], [11, 10], [21, 20]])
        #expect(cells(try ImageProcessors.Rotate(quarterTurns: 2).process(image)) == [[21, 11, 1], [20, 10, 0]])
        #expect(cells(try ImageProcessors.Rotate(quarterTurns: -1).process(image)) == [[20, 21], [10, 11], [0, 1]])
        #expect(ImageProcessors.Rotate(degrees: 45) == nil)
        #expect(ImageProcessors.Rotate(degrees: 270)?.quarterTurns == 3)
    }

    @Test("crop keeps a rectangle, clipped to the image, or a size placed by an anchor; outside throws")
    func crop() throws {
        let image = Image(pixels: grid)
        #expect(cells(try ImageProcessors.Crop(.rect(x: 1, y: 0, width: 2, height: 1)).process(image)) == [[10, 20]])
        #expect(cells(try ImageProcessors.Crop(.rect(x: 2, y: 1, width: 9, height: 9)).process(image)) == [[21]])
        #expect(
            cells(try ImageProcessors.Crop(.size(width: 1, height: 1, anchor: .bottomRight)).process(image)) == [[21]])
        #expect(
            cells(try ImageProcessors.Crop(.size(width: 1, height: 2, anchor: .center)).process(image)) == [[10], [11]])
        #expect(try ImageProcessors.Crop(.size(width: 10, height: 10, anchor: .center)).process(image) == image)
        #expect(throws: ImageProcessingError.self) {
            try ImageProcessors.Crop(.rect(x: 5, y: 0, width: 2, height: 2)).process(image)
        }
        #expect(throws: ImageProcessingError.self) {
            try ImageProcessors.Crop(.size(width: 0, height: 2, anchor: .center)).process(image)
        }
    }

    // MARK: Colour

    @Test("grayscale is BT.601 luma, and keeps alpha")
    func grayscale() throws {
        let colours = try ProcessorFixtures.buffer(width: 3, height: 1) { x, _ in
            [[255, 0, 0, 255], [0, 255, 0, 128], [0, 0, 255, 0]][x]
        }
        let gray = try ImageProcessors.Grayscale().process(Image(pixels: colours))
        #expect(gray.pixelFormat == .grayAlpha8)
        #expect(gray.pixels.row(0) == [76, 255, 150, 128, 29, 0])
        let opaque = try ImageProcessors.Grayscale().process(
            Image(pixels: try ProcessorFixtures.picture(width: 4, height: 4)))
        #expect(opaque.pixelFormat == .gray8)
    }

    @Test("tint washes by the colour's alpha and keeps the image's alpha; overlay keeps black and white")
    func tintAndOverlay() throws {
        let image = Image(pixels: grid)
        let painted = try ImageProcessors.Tint(PixelColor(red: 200, green: 100, blue: 0)).process(image)
        #expect((0..<3).allSatisfy { ProcessorFixtures.pixel(painted.pixels, $0, 1) == [200, 100, 0, 255] })
        let half = try ImageProcessors.Tint(PixelColor(red: 200, green: 100, blue: 0, alpha: 128)).process(image)
        #expect(ProcessorFixtures.pixel(half.pixels, 0, 0) == [100, 50, 3, 255])
        let none = try ImageProcessors.Tint(PixelColor(red: 200, green: 100, blue: 0, alpha: 0)).process(image)
        #expect(none == image)

        let levels = try ProcessorFixtures.buffer(width: 3, height: 1, format: .gray8) { x, _ in [[0, 64, 255][x]] }
        let overlaid = try ImageProcessors.Overlay(.white).process(Image(pixels: levels))
        #expect(overlaid.pixelFormat == .gray8)
        #expect(overlaid.pixels.row(0) == [0, 128, 255])
        let warm = try ImageProcessors.Overlay(PixelColor(red: 255, green: 128, blue: 0)).process(Image(pixels: levels))
        #expect(warm.pixelFormat == .rgb8)
        #expect(ProcessorFixtures.pixel(warm.pixels, 1, 0) == [128, 64, 0])
    }

    // MARK: Decoration

    @Test("border adds a band of colour on every side, widening the format when the colour needs it")
    func border() throws {
        let gray = try ProcessorFixtures.buffer(width: 2, height: 2, format: .gray8) { _, _ in [90] }
        let framed = try ImageProcessors.Border(width: 3, color: PixelColor(red: 255, green: 0, blue: 0))
            .process(Image(pixels: gray))
        #expect((framed.width, framed.height, framed.pixelFormat) == (8, 8, .rgb8))
        #expect(ProcessorFixtures.pixel(framed.pixels, 0, 0) == [255, 0, 0])
        #expect(ProcessorFixtures.pixel(framed.pixels, 7, 4) == [255, 0, 0])
        #expect(ProcessorFixtures.pixel(framed.pixels, 3, 3) == [90, 90, 90])
        #expect(ProcessorFixtures.pixel(framed.pixels, 4, 4) == [90, 90, 90])
        let clear = try ImageProcessors.Border(width: 1, color: .clear).process(Image(pixels: gray))
        #expect(clear.pixelFormat == .grayAlpha8 && ProcessorFixtures.pixel(clear.pixels, 0, 0) == [0, 0])
    }

    @Test("round corners make the corners transparent, anti-aliased; circle keeps a centred disc")
    func cornersAndCircle() throws {
        let opaque = try ProcessorFixtures.buffer(width: 40, height: 30, format: .rgb8) { _, _ in [10, 200, 30] }
        let rounded = try ImageProcessors.RoundCorners(radius: 10).process(Image(pixels: opaque))
        #expect(rounded.pixelFormat == .rgba8 && rounded.width == 40 && rounded.height == 30)
        let alpha = { (x: Int, y: Int) in ProcessorFixtures.pixel(rounded.pixels, x, y)[3] }
        #expect([alpha(0, 0), alpha(39, 0), alpha(0, 29), alpha(39, 29)] == [0, 0, 0, 0])
        #expect([alpha(20, 0), alpha(0, 15), alpha(10, 10), alpha(20, 15)] == [255, 255, 255, 255])
        // Along the arc, coverage is partial: some pixels are neither 0 nor 255.
        #expect((0..<10).contains { alpha($0, 2) > 0 && alpha($0, 2) < 255 })
        #expect(ProcessorFixtures.pixel(rounded.pixels, 20, 15) == [10, 200, 30, 255])

        let circle = try ImageProcessors.Circle().process(Image(pixels: opaque))
        #expect((circle.width, circle.height) == (30, 30))
        let c = { (x: Int, y: Int) in ProcessorFixtures.pixel(circle.pixels, x, y)[3] }
        #expect([c(0, 0), c(29, 29), c(3, 3)] == [0, 0, 0])
        #expect(c(15, 15) == 255)
        // The middle of each edge touches the circle: (almost) fully covered.
        #expect([c(15, 0), c(0, 15), c(29, 15), c(15, 29)].allSatisfy { $0 >= 240 })
    }

    // MARK: Blur

    @Test("three boxes have the Gaussian's variance")
    func boxWidths() {
        // (Below about 0.7 the three boxes are single pixels: such a blur does nothing, as documented.)
        for sigma in [1, 2.5, 4, 10, 33] {
            let widths = ImageProcessors.Blur.boxWidths(sigma: sigma)
            #expect(widths.count == 3 && widths.allSatisfy { $0 % 2 == 1 })
            let variance = widths.reduce(0.0) { $0 + (Double($1 * $1) - 1) / 12 }
            #expect(abs(variance.squareRoot() - sigma) < max(0.35, sigma * 0.08), "sigma \(sigma): \(widths)")
        }
    }

    @Test("blur keeps a flat image flat, spreads a dot symmetrically, and conserves its light")
    func blur() throws {
        let flat = try ProcessorFixtures.buffer(width: 30, height: 20, format: .rgb8) { _, _ in [40, 80, 120] }
        #expect(try ImageProcessors.Blur(radius: 3).process(Image(pixels: flat)) == Image(pixels: flat))

        let dot = try ProcessorFixtures.buffer(width: 41, height: 41, format: .gray8) { x, y in
            [x == 20 && y == 20 ? 255 : 0]
        }
        let blurred = try ImageProcessors.Blur(radius: 1.5).process(Image(pixels: dot)).pixels
        let value = { (x: Int, y: Int) in Int(blurred.row(y)[x]) }
        #expect(value(20, 20) < 255 && value(20, 20) > 0)
        #expect(value(19, 20) == value(21, 20) && value(20, 19) == value(20, 21))
        #expect(abs(value(19, 20) - value(20, 19)) <= 1)  // rows and columns round in a different order
        #expect(value(20, 20) > value(22, 20) && value(22, 20) >= value(25, 20))
        #expect(value(0, 0) == 0)

        // A bright band keeps its total (within rounding) and spreads over its edges.
        let band = try ProcessorFixtures.buffer(width: 60, height: 60, format: .gray8) { x, _ in
            [(25..<35).contains(x) ? 200 : 0]
        }
        let spread = try ImageProcessors.Blur(radius: 4).process(Image(pixels: band)).pixels
        let before = 10 * 200 * 60
        let after = (0..<60).reduce(0) { $0 + spread.row($1).reduce(0) { $0 + Int($1) } }
        #expect(abs(after - before) < before / 50)
        #expect(spread.row(30)[22] > 0 && spread.row(30)[30] < 200)

        // Alpha is premultiplied: a transparent neighbour does not darken an opaque colour.
        let edge = try ProcessorFixtures.buffer(width: 20, height: 4) { x, _ in
            x < 10 ? [250, 250, 250, 255] : [0, 0, 0, 0]
        }
        let soft = try ImageProcessors.Blur(radius: 2).process(Image(pixels: edge)).pixels
        for x in 0..<20 {
            let p = ProcessorFixtures.pixel(soft, x, 2)
            if p[3] > 32 { #expect(p[0] >= 240, "x \(x): \(p)") }
        }
        #expect(try ImageProcessors.Blur(radius: 0).process(Image(pixels: dot)) == Image(pixels: dot))
    }

    // MARK: Identifiers and composition

    @Test("identifiers name every parameter: equal processors agree, different ones never collide")
    func identifiers() {
        let processors: [any ImageProcessing] = [
            .resize(width: 300), .resize(height: 300), .resize(width: 300, height: 300),
            .resize(width: 300, height: 300, fit: .cover), .resize(width: 300, height: 300, fit: .fill),
            .resize(width: 300, height: 300, fit: .cover, anchor: .top),
            .resize(width: 300, height: 300, filter: .mitchell), .resize(width: 300, upscale: true),
            .resize(width: 300, reducingGap: nil), .resize(width: 300, reducingGap: 3),
            .downsample(width: 300), .crop(x: 0, y: 0, width: 10, height: 10), .crop(x: 0, y: 1, width: 10, height: 10),
            .crop(width: 10, height: 10), .crop(width: 10, height: 10, anchor: .topLeft), .blur(radius: 4),
            .blur(radius: 4.5), .roundCorners(radius: 8), .circle(), .grayscale(), .flip(), .flip(vertically: true),
            .rotate(quarterTurns: 1), .rotate(quarterTurns: 2), .tint(.black), .tint(.white), .overlay(.black),
            .border(width: 2), .border(width: 2, color: .white), .composition([.grayscale(), .blur(radius: 4)]),
        ]
        let identifiers = processors.map(\.identifier)
        #expect(Set(identifiers).count == identifiers.count, "\(identifiers)")
        let viaFactory: ImageProcessors.Resize = .resize(width: 300)
        #expect(viaFactory == ImageProcessors.Resize(width: 300))
        // Pinned: identifiers are part of cache keys on disk, so they must not change between runs or releases.
        #expect(
            ImageProcessors.Resize(width: 256, height: 256, fit: .cover).identifier
                == "resize(256x256,fit=cover,anchor=0.5:0.5,filter=lanczos3,upscale=false,gap=2.0)")
        #expect(ImageProcessors.Blur(radius: 4).identifier == "blur(4.0)")
        #expect(
            ImageProcessors.Tint(PixelColor(red: 1, green: 171, blue: 255, alpha: 16)).identifier == "tint(#01abff10)")
        #expect(
            ImageProcessors.Downsample(width: 64).identifier
                == "downsample(64xauto,fit=inside,anchor=0.5:0.5,filter=lanczos3,upscale=false,gap=2.0)")
    }

    @Test("a composition runs its processors in order and is identified by them")
    func composition() throws {
        let image = Image(pixels: try ProcessorFixtures.picture(width: 64, height: 48))
        let steps: [any ImageProcessing] = [.resize(width: 32), .flip(), .grayscale()]
        let composed = ImageProcessors.Composition(steps)
        #expect(composed.identifier == steps.compositeIdentifier)
        #expect(composed.identifier == steps.map(\.identifier).joined(separator: "|"))
        let stepwise = try steps.reduce(image) { try $1.process($0) }
        #expect(try composed.process(image) == stepwise)
        #expect(stepwise.width == 32 && stepwise.pixelFormat == .gray8)
    }

    @Test("every processor keeps an animation's frames and durations")
    func animationsKeepFrames() throws {
        let frames = try (0..<2).map { index in
            ImageFrame(
                pixels: try ProcessorFixtures.buffer(width: 20, height: 12) { x, _ in [UInt8(x * 10), 50, 90, 255] },
                duration: .milliseconds(70 + index))
        }
        let image = try Image(frames: frames, loopCount: 2, sourceFormat: .webp)
        let processors: [any ImageProcessing] = [
            .resize(width: 10), .crop(width: 8, height: 8), .rotate(quarterTurns: 1), .flip(), .blur(radius: 2),
            .roundCorners(radius: 3), .circle(), .grayscale(), .tint(.white), .overlay(.black), .border(width: 1),
        ]
        for processor in processors {
            let output = try processor.process(image)
            #expect(output.frames.count == 2, "\(processor.identifier)")
            #expect(output.frames.map(\.duration) == [.milliseconds(70), .milliseconds(71)], "\(processor.identifier)")
            #expect(output.loopCount == 2 && output.sourceFormat == .webp, "\(processor.identifier)")
        }
    }
}
