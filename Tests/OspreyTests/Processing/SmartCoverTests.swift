import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

/// `SmartCover`: the cover window goes to the picture's interest — on synthetic pictures whose subject is known, and
/// on corpus photos whose subject is off-centre, with the subject's region written down from looking at them.
@Suite struct SmartCoverTests {
    /// A `width`×`height` picture: a flat, slightly graded background and a busy, saturated disc centred at `centre`
    /// (fractions of the sides) of radius `radius` (a fraction of the height).
    static func picture(width: Int, height: Int, centre: (Double, Double), radius: Double) throws -> Image {
        let pixels = try ProcessorFixtures.buffer(width: width, height: height, format: .rgb8) { x, y in
            let (dx, dy) = (Double(x) - centre.0 * Double(width), Double(y) - centre.1 * Double(height))
            if (dx * dx + dy * dy).squareRoot() < radius * Double(height) {
                return (x / 3 + y / 3) % 2 == 0 ? [220, 60, 40] : [40, 180, 60]
            }
            return [UInt8(110 + x * 20 / width), 112, 115]
        }
        return Image(pixels: pixels)
    }

    @Test("the window follows the subject along the axis the crop frees, and keeps the middle of a flat picture")
    func synthetic() throws {
        let right = try Self.picture(width: 400, height: 200, centre: (0.8, 0.5), radius: 0.3)
        #expect(try ImageProcessors.SmartCover.anchor(for: right, width: 100, height: 100).x > 0.9)
        let left = try Self.picture(width: 400, height: 200, centre: (0.15, 0.5), radius: 0.3)
        #expect(try ImageProcessors.SmartCover.anchor(for: left, width: 100, height: 100).x < 0.1)
        let low = try Self.picture(width: 200, height: 400, centre: (0.5, 0.85), radius: 0.12)
        #expect(try ImageProcessors.SmartCover.anchor(for: low, width: 100, height: 100).y > 0.9)
        let flat = Image(
            pixels: try ProcessorFixtures.buffer(width: 300, height: 100, format: .rgb8) { _, _ in [90, 90, 90] })
        #expect(try ImageProcessors.SmartCover.anchor(for: flat, width: 50, height: 50) == .center)
        // The result is the cover's size, with the subject in it.
        let crop = try ImageProcessors.SmartCover(width: 100, height: 100).process(right)
        #expect(crop.width == 100 && crop.height == 100)
        #expect(ImageProcessors.SmartCover(width: 10, height: 20).identifier == "smartcover(10x20)")
    }

    /// Corpus photos whose subject is off-centre, and the subject's region (fractions of the upright picture: x0,
    /// y0, x1, y1), as looked at: a square crop must contain it whole, where the centre crop does not.
    static let photos: [(path: String, subject: (Double, Double, Double, Double))] = [
        // Bruegel's Harvesters: the peasants resting under the tree, bottom right.
        ("valid/jpeg/photos/harvesters.jpeg", (0.63, 0.70, 0.91, 0.97)),
        // A tablet on a concrete floor, at the top right of a portrait photo (EXIF orientation 6).
        ("valid/jpeg/large/pixel3a_exif_rotated.jpg", (0.5, 0.05, 1.0, 0.55)),
    ]

    @Test("on corpus photos the square crop keeps the subject the centre crop cuts", .requiresTestData)
    func corpusPhotos() throws {
        for (path, subject) in Self.photos {
            let image = try ImageDecoder.decode(try TestData.bytes(path))
            let (width, height) =
                image.orientation.swapsDimensions ? (image.height, image.width) : (image.width, image.height)
            let side = min(width, height)
            let anchor = try ImageProcessors.SmartCover.anchor(for: image, width: 256, height: 256)
            // The window, in fractions of the picture.
            func window(_ anchor: Anchor) -> (Double, Double, Double, Double) {
                let (w, h) = (Double(side) / Double(width), Double(side) / Double(height))
                return ((1 - w) * anchor.x, (1 - h) * anchor.y, (1 - w) * anchor.x + w, (1 - h) * anchor.y + h)
            }
            func contains(_ window: (Double, Double, Double, Double)) -> Bool {
                window.0 <= subject.0 && window.1 <= subject.1 && window.2 >= subject.2 && window.3 >= subject.3
            }
            #expect(!contains(window(.center)), "\(path): the centre crop already holds the subject")
            #expect(contains(window(anchor)), "\(path): anchor \(anchor), window \(window(anchor))")
        }
    }
}
