import OspreyCodecs
import Testing

@testable import Osprey

/// The processors imgproxy's and thumbor's options need, as library API: trim, pixelate, tone adjustments, elliptical
/// and filled corners, aspect-ratio and offset canvases, gravity crops, letterboxes, tiled marks, and the resize fits
/// and factors (imgproxy's sizes are checked against its documentation in the server's suite).
@Suite struct ProxyOptionProcessorTests {
    typealias Resize = ImageProcessors.Resize

    /// A white 60×40 image with a red 20×10 block at (25, 12).
    static func framed() throws -> Image {
        Image(
            pixels: try ProcessorFixtures.buffer(width: 60, height: 40, format: .rgb8) { x, y in
                (25..<45).contains(x) && (12..<22).contains(y) ? [255, 0, 0] : [255, 255, 255]
            })
    }

    @Test("trim keeps the content's rectangle: background from the corner or a colour, threshold, equal sides")
    func trim() throws {
        let image = try Self.framed()
        let trimmed = try ImageProcessors.Trim().process(image)
        #expect((trimmed.width, trimmed.height) == (20, 10))
        #expect(ProcessorFixtures.pixel(trimmed.pixels, 0, 0) == [255, 0, 0])
        // Equal sides: 25 left and 15 right → 15 each; 12 top and 18 bottom → 12 each.
        let equal = try ImageProcessors.Trim(equalHorizontal: true, equalVertical: true).process(image)
        #expect((equal.width, equal.height) == (30, 16))
        // A background colour given that is not the border's: nothing is background, nothing is cut.
        let blue = try ImageProcessors.Trim(background: .color(PixelColor(red: 0, green: 0, blue: 255)))
            .process(image)
        #expect((blue.width, blue.height) == (60, 40))
        // A threshold past the red's distance from white (≈ 360) counts the block as background too: all
        // background, left as it is.
        #expect(try ImageProcessors.Trim(threshold: 400).process(image) == image)
        // Transparency is a colour of its own: a transparent border goes.
        let transparent = Image(
            pixels: try ProcessorFixtures.buffer(width: 10, height: 10) { x, y in
                (3..<7).contains(x) && (4..<6).contains(y) ? [0, 0, 0, 255] : [0, 0, 0, 0]
            })
        let cut = try ImageProcessors.Trim().process(transparent)
        #expect((cut.width, cut.height) == (4, 2))
        #expect(
            ImageProcessors.Trim(background: .bottomRight, threshold: 5).identifier
                == "trim(bottom-right,threshold=5.0,equal=)")
    }

    @Test("pixelate makes blocks of their average; the last ones cut short by the edge")
    func pixelate() throws {
        let image = Image(
            pixels: try ProcessorFixtures.buffer(width: 5, height: 3, format: .gray8) { x, _ in [UInt8(x * 50)] })
        let blocks = try ImageProcessors.Pixelate(size: 2).process(image).pixels
        #expect(blocks.row(0) == [25, 25, 125, 125, 200])
        #expect(blocks.row(2) == [25, 25, 125, 125, 200])
        #expect(try ImageProcessors.Pixelate(size: 1).process(image) == image)
    }

    @Test("adjust: thumbor's brightness, contrast, rgb and saturation arithmetic; gamma; identity when default")
    func adjust() throws {
        let image = Image(
            pixels: try ProcessorFixtures.buffer(width: 2, height: 1, format: .rgb8) { x, _ in
                x == 0 ? [100, 150, 200] : [10, 250, 128]
            })
        func values(_ adjust: ImageProcessors.Adjust) throws -> [UInt8] {
            Array(try adjust.process(image).pixels.row(0))
        }
        #expect(try values(ImageProcessors.Adjust(brightness: 25)) == [125, 175, 225, 35, 255, 153])
        #expect(try values(ImageProcessors.Adjust(contrast: 2)) == [72, 172, 255, 0, 255, 128])
        #expect(try values(ImageProcessors.Adjust(red: 10, green: -10, blue: 0)) == [110, 140, 200, 20, 240, 128])
        #expect(try values(ImageProcessors.Adjust(saturation: 0)).prefix(3).allSatisfy { $0 == 144 })
        let brighter = try values(ImageProcessors.Adjust(gamma: 2))
        #expect(brighter[0] == 160 && brighter[1] == 196)
        #expect(ImageProcessors.Adjust().isIdentity)
        #expect(try ImageProcessors.Adjust().process(image) == image)
        #expect(ImageProcessors.Adjust(brightness: .nan, contrast: .infinity).isIdentity)
    }

    @Test("round corners: an ellipse's quarter when the radii differ; a colour fills them instead of transparency")
    func corners() throws {
        let image = Image(
            pixels: try ProcessorFixtures.buffer(width: 40, height: 20, format: .rgb8) { _, _ in [0, 0, 255] })
        let transparent = try ImageProcessors.RoundCorners(radius: 10).process(image)
        #expect(transparent.pixels.format == .rgba8)
        #expect(ProcessorFixtures.pixel(transparent.pixels, 0, 0)[3] == 0)
        #expect(ProcessorFixtures.pixel(transparent.pixels, 20, 10)[3] == 255)
        let filled = try ImageProcessors.RoundCorners(radius: 16, verticalRadius: 6, color: .white).process(image)
        #expect(filled.pixels.format == .rgb8)
        #expect(ProcessorFixtures.pixel(filled.pixels, 0, 0) == [255, 255, 255])
        // 12 pixels in along the top edge is still outside a 16-wide, 6-high corner; past the radius it is not.
        #expect(ProcessorFixtures.pixel(filled.pixels, 3, 0) == [255, 255, 255])
        #expect(ProcessorFixtures.pixel(filled.pixels, 17, 0) == [0, 0, 255])
        #expect(ProcessorFixtures.pixel(filled.pixels, 20, 3) == [0, 0, 255])
        #expect(ImageProcessors.RoundCorners(radius: 5).identifier == "roundCorners(5)")
    }

    @Test("canvases: the aspect ratio's smallest canvas, offsets from the anchored edge, letterbox fills")
    func canvases() throws {
        let image = Image(
            pixels: try ProcessorFixtures.buffer(width: 40, height: 20, format: .rgb8) { _, _ in [9, 9, 9] })
        let square = try ImageProcessors.ExtendToAspectRatio(width: 1, height: 1, color: .white).process(image)
        #expect((square.width, square.height) == (40, 40))
        #expect(ProcessorFixtures.pixel(square.pixels, 20, 5) == [255, 255, 255])
        #expect(ProcessorFixtures.pixel(square.pixels, 20, 20) == [9, 9, 9])
        let wide = try ImageProcessors.ExtendToAspectRatio(width: 4, height: 1).process(image)
        #expect((wide.width, wide.height) == (80, 20))
        // Anchored top-left and moved 5 right, 3 down.
        let moved = try ImageProcessors.Extend(
            width: 60, height: 30, anchor: .topLeft, color: .white, offsetX: 5, offsetY: 3
        ).process(image)
        #expect(ProcessorFixtures.pixel(moved.pixels, 4, 3) == [255, 255, 255])
        #expect(ProcessorFixtures.pixel(moved.pixels, 5, 3) == [9, 9, 9])
        let boxed = try ImageProcessors.Letterbox(width: 60, height: 40, fill: .median).process(image)
        #expect((boxed.width, boxed.height) == (60, 40))
        #expect(ProcessorFixtures.pixel(boxed.pixels, 0, 0) == [9, 9, 9, 255])
        let blurred = try ImageProcessors.Letterbox(width: 60, height: 40, fill: .blurred(sigma: 5)).process(image)
        #expect(ProcessorFixtures.pixel(blurred.pixels, 0, 0) == [9, 9, 9, 255])
        let red = try ImageProcessors.Letterbox(
            width: 60, height: 40, fill: .color(PixelColor(red: 255, green: 0, blue: 0))
        ).process(image)
        #expect(ProcessorFixtures.pixel(red.pixels, 0, 0) == [255, 0, 0, 255])
        #expect(ProcessorFixtures.pixel(red.pixels, 30, 20) == [9, 9, 9, 255])
    }

    @Test("crop by gravity: pixels or fractions, 0 the whole side, offsets; and centred on a focus point")
    func gravityCrop() throws {
        let crop = ImageProcessors.Crop(.gravity(width: 0.5, height: 0, anchor: .right, offsetX: 10, offsetY: 0))
        #expect(try crop.rect(inWidth: 200, height: 100) == (90, 0, 100, 100))
        let pixels = ImageProcessors.Crop(.gravity(width: 50, height: 20, anchor: .topLeft, offsetX: 0.1, offsetY: 5))
        #expect(try pixels.rect(inWidth: 200, height: 100) == (20, 5, 50, 20))
        let focus = ImageProcessors.Crop(.focus(width: 40, height: 40, x: 0.9, y: 0.5))
        #expect(try focus.rect(inWidth: 200, height: 100) == (160, 30, 40, 40))
    }

    @Test("resize: clip keeps a small source's own sides, outside covers without cropping, auto follows orientation")
    func newFits() throws {
        func size(_ resize: Resize, _ width: Int, _ height: Int) throws -> (Int, Int) {
            try resize.plan(sourceWidth: width, sourceHeight: height).map { ($0.width, $0.height) } ?? (width, height)
        }
        #expect(try size(Resize(width: 300, height: 200, fit: .clip), 100, 100) == (100, 100))
        #expect(try size(Resize(width: 300, height: 200, fit: .clip), 400, 100) == (300, 100))
        #expect(try size(Resize(width: 300, height: 200, fit: .cover), 400, 100) == (150, 100))
        #expect(try size(Resize(width: 300, height: 200, fit: .clip, upscale: true), 100, 100) == (300, 200))
        #expect(try size(Resize(width: 100, height: 100, fit: .outside), 400, 300) == (133, 100))
        #expect(try size(Resize(width: 300, height: 200, fit: .auto), 1000, 800) == (300, 200))
        #expect(try size(Resize(width: 300, height: 200, fit: .auto), 800, 1000) == (160, 200))
        #expect(try size(Resize(width: 100, minWidth: 150), 400, 300) == (150, 113))
        #expect(try size(Resize(width: 100, zoomX: 2, zoomY: 2), 400, 300) == (200, 150))
        // Offsets move the crop away from the anchored edge, in scaled pixels.
        let anchored = try #require(
            try Resize(width: 100, height: 100, fit: .cover, anchor: .left, offsetX: 20)
                .plan(sourceWidth: 400, sourceHeight: 200))
        #expect(anchored.rect.x == 40)
    }

    @Test("max bytes: the highest quality that fits; the lowest's result when none does; per-format qualities")
    func outputLimits() throws {
        let image = Image(pixels: try ProcessorFixtures.picture(width: 256, height: 192))
        var output = ImageOutput(.format(.jpeg))
        output.options.quality = 95
        let full = try output.encode(image)
        output.maxBytes = full.bytes.count / 3
        let fitted = try output.encode(image)
        #expect(fitted.bytes.count <= full.bytes.count / 3)
        #expect(fitted.bytes.count > full.bytes.count / 6, "a quality much lower than needed was kept")
        output.maxBytes = 10
        let smallest = try output.encode(image)
        var lowest = output
        lowest.maxBytes = nil
        lowest.options.quality = 1
        #expect(smallest.bytes == (try lowest.encode(image)).bytes)
        var source = ImageOutput(.source())
        source.qualities = [.png: 50, .jpeg: 42]
        #expect(source.options(for: .jpeg).quality == 42)
        #expect(source.identifier.hasSuffix(",qualities=jpeg:42;png:50"))
    }

    @Test("a tiled watermark covers the image from its top-left corner, the offsets apart")
    func tiledWatermark() throws {
        let mark = Image(pixels: try ProcessorFixtures.buffer(width: 4, height: 4) { _, _ in [255, 0, 0, 255] })
        let image = Image(
            pixels: try ProcessorFixtures.buffer(width: 20, height: 10, format: .rgb8) { _, _ in [0, 0, 0] })
        let tiled = try ImageProcessors.Watermark(
            mark: mark, name: "red", anchor: .center, offsetX: 2, offsetY: 1, tiled: true
        ).process(image)
        #expect(ProcessorFixtures.pixel(tiled.pixels, 0, 0) == [255, 0, 0])
        #expect(ProcessorFixtures.pixel(tiled.pixels, 4, 0) == [0, 0, 0])
        #expect(ProcessorFixtures.pixel(tiled.pixels, 6, 5) == [255, 0, 0])
        #expect(ProcessorFixtures.pixel(tiled.pixels, 18, 5) == [255, 0, 0])
    }
}
