import Foundation
import OspreyCodecs
import Testing

@testable import Osprey

/// `ImageOutput.Format.best`: the smallest of the accepted formats at one perceptual target, lossless for a picture
/// of few colours, never JPEG for an image with alpha.
struct BestFormatTests {
    /// A 160 × 120 picture with texture, as a photo has.
    static func textured(alpha: Bool = false) throws -> Image {
        var bytes: [UInt8] = []
        for y in 0..<120 {
            for x in 0..<160 {
                let r = UInt8(128 + 100 * sin(Double(x) / 4 + Double(y) / 9))
                let pixel = [r, UInt8((x * 3 + y) % 200), UInt8(y * 2)]
                bytes += alpha ? pixel + [UInt8(x < 80 ? 255 : 90)] : pixel
            }
        }
        return Image(
            pixels: try PixelBuffer(width: 160, height: 120, format: alpha ? .rgba8 : .rgb8, bytes: bytes))
    }

    @Test func theSmallestCandidateIsKept() throws {
        let image = try Self.textured()
        let accepted: Set<ImageFormat> = [.jpeg, .webp, .avif, .png]
        let best = try ImageOutput(.best(accepted: accepted)).encode(image)
        // Every candidate at the same target: none is smaller than the one kept.
        var sizes: [ImageFormat: Int] = [:]
        for format in ImageOutput.bestCandidates(for: image, accepted: accepted, coders: .shared) {
            let found = try ImageOutput.perceptualEncoding(
                of: image, as: format, options: EncodingOptions(), target: ImageOutput.Quality.defaultTarget)
            sizes[format] = found.bytes.count
        }
        #expect(Set(sizes.keys) == [.jpeg, .webp, .avif])
        #expect(sizes.values.allSatisfy { best.bytes.count <= $0 }, "\(best.format) \(best.bytes.count), \(sizes)")
        #expect(best.bytes.count == sizes.values.min())
        #expect(best.quality != nil)
        #expect(ImageFormat(sniffing: best.bytes) == best.format)
    }

    @Test func theMostBytesHoldForTheFormatKept() throws {
        let image = try Self.textured()
        var output = ImageOutput(.best(accepted: [.jpeg, .webp]))
        let unlimited = try output.encode(image)
        output.maxBytes = unlimited.bytes.count / 2
        let limited = try output.encode(image)
        #expect(limited.bytes.count <= unlimited.bytes.count / 2)
        #expect(limited.format == unlimited.format)
        #expect(try #require(limited.quality) < unlimited.quality!)
    }

    @Test func aPictureOfFewColorsIsWrittenLosslessly() throws {
        // A diagram: three flat colours.
        var bytes: [UInt8] = []
        for y in 0..<120 {
            for x in 0..<200 {
                bytes += x < 60 ? [200, 30, 30] : (y < 60 ? [30, 30, 200] : [240, 240, 240])
            }
        }
        let diagram = Image(pixels: try PixelBuffer(width: 200, height: 120, format: .rgb8, bytes: bytes))
        #expect(ImageOutput.hasFewColors(diagram.frames[0].pixels))
        let best = try ImageOutput(.best(accepted: [.jpeg, .webp, .png])).encode(diagram)
        #expect(best.quality == nil, "\(best.format)")
        #expect([ImageFormat.webp, .png].contains(best.format))
        #expect(try ImageDecoder.decode(best.bytes).frames[0].pixels.converted(to: .rgb8) == diagram.frames[0].pixels)
        #expect(!ImageOutput.hasFewColors(try Self.textured().frames[0].pixels))
    }

    @Test func anImageWithAlphaIsNeverJPEG() throws {
        let image = try Self.textured(alpha: true)
        #expect(ImageOutput.bestCandidates(for: image, accepted: [.jpeg, .webp], coders: .shared) == [.webp])
        let best = try ImageOutput(.best(accepted: [.jpeg, .webp])).encode(image)
        #expect(best.format == .webp)
        // Only JPEG accepted: what the source rule writes (PNG for alpha).
        #expect(try ImageOutput(.best(accepted: [.jpeg, .png])).encode(image).format == .png)
        #expect(ImageOutput(.best(accepted: [.jpeg])).identifier.hasPrefix("output=best(jpeg),"))
    }
}
