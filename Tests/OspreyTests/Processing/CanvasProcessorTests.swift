import Foundation
import OspreyCodecs
import Testing

@testable import Osprey

/// Pad, Extend and Sharpen: sizes, placement, colours, and what sharpening does and leaves alone.
@Suite struct CanvasProcessorTests {
    /// A 4×2 opaque gray image.
    static func gray() throws -> Image {
        Image(pixels: try ProcessorFixtures.buffer(width: 4, height: 2, format: .gray8) { _, _ in [100] })
    }

    @Test("pad adds each side's band in its colour, widening the format as the colour needs")
    func pad() throws {
        let padded = try ImageProcessors.Pad(top: 1, right: 2, bottom: 0, left: 3, color: .clear).process(Self.gray())
        let pixels = padded.frames[0].pixels
        #expect(pixels.width == 9 && pixels.height == 3)
        #expect(pixels.format == .grayAlpha8)
        #expect(ProcessorFixtures.pixel(pixels, 0, 0) == [0, 0])
        #expect(ProcessorFixtures.pixel(pixels, 3, 1) == [100, 255])
        #expect(ProcessorFixtures.pixel(pixels, 7, 1) == [0, 0])
        let red = try ImageProcessors.Pad(
            top: 1, right: 1, bottom: 1, left: 1, color: PixelColor(red: 255, green: 0, blue: 0)
        )
        .process(Self.gray())
        #expect(red.frames[0].pixels.format == .rgb8)
        #expect(ProcessorFixtures.pixel(red.frames[0].pixels, 0, 0) == [255, 0, 0])
        #expect(ImageProcessors.Pad(top: 0, right: 0, bottom: 0, left: 0).identifier == "pad(0,0,0,0,#00000000)")
    }

    @Test("extend places the image on the canvas by its anchor, and never crops")
    func extend() throws {
        let corner = try ImageProcessors.Extend(width: 6, height: 4, anchor: .bottomRight, color: .white)
            .process(Self.gray())
        let pixels = corner.frames[0].pixels
        #expect(pixels.width == 6 && pixels.height == 4)
        #expect(ProcessorFixtures.pixel(pixels, 0, 0) == [255])
        #expect(ProcessorFixtures.pixel(pixels, 2, 2) == [100])
        #expect(ProcessorFixtures.pixel(pixels, 1, 3) == [255])
        // Smaller than the image on one axis: that axis keeps the image's size.
        let wide = try ImageProcessors.Extend(width: 2, height: 4).process(Self.gray())
        #expect(wide.frames[0].pixels.width == 4 && wide.frames[0].pixels.height == 4)
        let same = try ImageProcessors.Extend(width: 3, height: 2).process(Self.gray())
        #expect(same.frames[0].pixels == (try Self.gray()).frames[0].pixels)
    }

    @Test("sharpen steepens an edge, leaves flat areas and alpha alone")
    func sharpen() throws {
        // A vertical edge from 80 to 160, in RGBA with a constant alpha of 200.
        let edge = try ProcessorFixtures.buffer(width: 20, height: 6) { x, _ in
            x < 10 ? [80, 80, 80, 200] : [160, 160, 160, 200]
        }
        let sharpened = try ImageProcessors.Sharpen(sigma: 1.5, amount: 1).process(Image(pixels: edge))
        let pixels = sharpened.frames[0].pixels
        // Just left of the edge darker than before, just right brighter: more contrast across it.
        #expect(ProcessorFixtures.pixel(pixels, 9, 3)[0] < 80)
        #expect(ProcessorFixtures.pixel(pixels, 10, 3)[0] > 160)
        // Far from it nothing changed but a level of rounding (the blur runs on premultiplied pixels), and alpha not
        // at all.
        for (x, value) in [(0, 80), (19, 160)] {
            let far = ProcessorFixtures.pixel(pixels, x, 3)
            #expect(far[0...2].allSatisfy { abs(Int($0) - value) <= 1 } && far[3] == 200, "\(far)")
        }
        #expect((0..<20).allSatisfy { ProcessorFixtures.pixel(pixels, $0, 2)[3] == 200 })
        #expect(try ImageProcessors.Sharpen(sigma: 1, amount: 0).process(Image(pixels: edge)).frames[0].pixels == edge)
        #expect(ImageProcessors.Sharpen(sigma: 1.5).identifier == "sharpen(1.5,1.0)")
    }

    @Test("a watermark lays its pixels over the image by its alpha and the opacity, composing alpha as 'over' does")
    func watermark() throws {
        let mark = Image(
            pixels: try ProcessorFixtures.buffer(width: 2, height: 2) { x, _ in
                x == 0 ? [0, 0, 255, 255] : [0, 0, 255, 0]
            })
        // Over an opaque gray image, at the top left: the opaque column is blue, the transparent one leaves gray.
        let marked = try ImageProcessors.Watermark(mark: mark, name: "m", anchor: .topLeft).process(Self.gray())
        let pixels = marked.frames[0].pixels
        #expect(pixels.format == .rgb8)
        #expect(
            ProcessorFixtures.pixel(pixels, 0, 0) == [0, 0, 255]
                && ProcessorFixtures.pixel(pixels, 1, 0) == [100, 100, 100])
        // Over a fully transparent image at half opacity: the result takes the mark's colour at half alpha.
        let clear = Image(pixels: try ProcessorFixtures.buffer(width: 4, height: 4) { _, _ in [0, 0, 0, 0] })
        let half = try ImageProcessors.Watermark(mark: mark, name: "m", opacity: 0.5, anchor: .bottomRight).process(
            clear)
        let over = ProcessorFixtures.pixel(half.frames[0].pixels, 2, 3)
        #expect(over[2] == 255 && (126...128).contains(over[3]), "\(over)")
        #expect(ProcessorFixtures.pixel(half.frames[0].pixels, 0, 0) == [0, 0, 0, 0])
        #expect(
            ImageProcessors.Watermark(mark: mark, name: "m", opacity: 0.5).identifier
                == "watermark(m,opacity=0.5,anchor=1.0:1.0,offset=0:0,scale=none)")
    }
}
