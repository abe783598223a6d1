import Osprey
import OspreyCodecs
import Testing

/// Every built-in processor, given the worst values its public parameters can hold (negative, zero, huge, NaN,
/// infinite, anchors set outside 0...1 after `init`), either throws or returns an image whose rectangle came from
/// inside the source. Under AddressSanitizer (`make test-asan` runs this suite) a copy from outside the pixel buffer
/// fails the run.
@Suite struct ProcessorParameterTests {
    /// A 10 × 6 RGBA image whose pixel (x, y) is (x, y, 7, 255), and a 2-frame animation of it.
    static func image(frames: Int = 1) throws -> Image {
        let pixels = try ProcessorFixtures.buffer(width: 10, height: 6) { x, y in [UInt8(x), UInt8(y), 7, 255] }
        return try Image(frames: Array(repeating: ImageFrame(pixels: pixels), count: frames))
    }

    static let hostileAnchors: [Anchor] = {
        var anchors: [Anchor] = []
        for (x, y) in [(-1.0, 2.0), (5, -3), (Double.nan, 0.5), (.infinity, -.infinity), (-1e300, 1e300)] {
            var anchor = Anchor.center
            anchor.x = x
            anchor.y = y
            anchors.append(anchor)
        }
        return anchors
    }()

    @Test func anAnchorSetOutsideItsRangeStillPlacesTheCropInsideTheImage() throws {
        // Given anchors assigned after init, as the issue found: x = -1, y = 2
        for anchor in Self.hostileAnchors {
            let crop = ImageProcessors.Crop(.size(width: 20, height: 20, anchor: anchor))
            // When the rectangle is computed for a 100 × 100 image
            let rect = try crop.rect(inWidth: 100, height: 100)
            // Then it lies inside
            #expect(rect.x >= 0 && rect.y >= 0 && rect.x + rect.width <= 100 && rect.y + rect.height <= 100)
            #expect(rect.width == 20 && rect.height == 20)
            // And cropping copies exactly the pixels of that rectangle of the source
            let source = try Self.image()
            let cropped = try ImageProcessors.Crop(.size(width: 4, height: 3, anchor: anchor)).process(source)
            let placed = try ImageProcessors.Crop(.size(width: 4, height: 3, anchor: anchor)).rect(
                inWidth: 10, height: 6)
            #expect(cropped.width == 4 && cropped.height == 3)
            #expect(ProcessorFixtures.pixel(cropped.pixels, 0, 0) == [UInt8(placed.x), UInt8(placed.y), 7, 255])
        }
        #expect(Anchor(x: .nan, y: -4) == Anchor(x: 0.5, y: 0))
    }

    @Test func rectanglesNearTheLimitsOfIntAreOutsideNotATrap() throws {
        let image = try Self.image()
        for (x, y, w, h) in [
            (Int.max, 0, Int.max, 3), (0, Int.max - 1, 5, 5), (-Int.max, -Int.max, Int.max, Int.max),
            (Int.min, Int.min, 10, 10), (3, 2, 0, 4), (3, 2, -5, 4), (10, 0, 1, 1), (0, 6, 1, 1),
        ] {
            #expect(throws: ImageProcessingError.self, "\(x),\(y),\(w),\(h)") {
                try ImageProcessors.Crop(.rect(x: x, y: y, width: w, height: h)).process(image)
            }
        }
        // Partly outside: the inside part is kept.
        let clipped = try ImageProcessors.Crop(.rect(x: 8, y: -3, width: Int.max, height: 5)).process(image)
        #expect(clipped.width == 2 && clipped.height == 2)
        #expect(ProcessorFixtures.pixel(clipped.pixels, 0, 0) == [8, 0, 7, 255])
    }

    @Test func everyProcessorSurvivesItsWorstParameters() throws {
        var processors: [any ImageProcessing] = [
            ImageProcessors.Border(width: Int.max), ImageProcessors.Border(width: Int.max / 2),
            ImageProcessors.RoundCorners(radius: Int.max), ImageProcessors.Blur(radius: .infinity),
            ImageProcessors.Blur(radius: .nan), ImageProcessors.Blur(radius: 1e300), ImageProcessors.Blur(radius: -1),
            ImageProcessors.Resize(width: Int.max, height: Int.max, fit: .fill),
            ImageProcessors.Resize(width: Int.max, upscale: true), ImageProcessors.Resize(width: 0),
            ImageProcessors.Resize(width: 3, reducingGap: .nan),
            ImageProcessors.Resize(width: 1, reducingGap: .infinity),
            ImageProcessors.Downsample(width: -5, height: 3), ImageProcessors.Circle(),
        ]
        var rotate = ImageProcessors.Rotate(quarterTurns: 1)
        rotate.quarterTurns = 7
        processors.append(rotate)
        rotate.quarterTurns = -13
        processors.append(rotate)
        var border = ImageProcessors.Border(width: 1)
        border.width = -9
        processors.append(border)
        var corners = ImageProcessors.RoundCorners(radius: 1)
        corners.radius = Int.min
        processors.append(corners)
        for anchor in Self.hostileAnchors {
            processors.append(ImageProcessors.Resize(width: 4, height: 4, fit: .cover, anchor: anchor))
            processors.append(ImageProcessors.Resize(width: 3, height: 5, fit: .cover, anchor: anchor, upscale: true))
            processors.append(ImageProcessors.Crop(.size(width: 3, height: 9, anchor: anchor)))
        }
        for frames in [1, 2] {
            let image = try Self.image(frames: frames)
            for processor in processors {
                do {
                    let result = try processor.process(image)
                    // Then what came out is a whole image of its stated size, frame by frame.
                    #expect(result.frames.count == frames, "\(processor.identifier)")
                    for frame in result.frames {
                        #expect(frame.pixels.width > 0 && frame.pixels.height > 0, "\(processor.identifier)")
                        #expect(
                            frame.pixels.byteCount >= frame.pixels.bytesPerRow * frame.pixels.height,
                            "\(processor.identifier)")
                        _ = frame.pixels.row(frame.pixels.height - 1).reduce(0, ^)
                    }
                } catch is ImageProcessingError {
                } catch is CodecError {
                    // A buffer that cannot be allocated (a border of Int.max) is an error, not a trap.
                }
            }
        }
    }
}
