import Foundation
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

/// SSIMULACRA 2's own behaviour: identical images, the order of qualities, sizes, alpha.
struct ImageQualityTests {
    /// A 96 × 64 picture with edges, gradients and texture, so that every scale has something to measure.
    static func picture(alpha: UInt8? = nil) throws -> PixelBuffer {
        var bytes: [UInt8] = []
        var random = SplitMix64(seed: 7)
        for y in 0..<64 {
            for x in 0..<96 {
                let noise = UInt8(random.next() % 24)
                let r = UInt8((x * 255) / 95) &+ noise
                let g = UInt8(x > 40 && x < 70 && y > 20 && y < 50 ? 220 : (y * 3) % 256)
                let b = UInt8(60 + x + y)
                bytes += alpha.map { [r, g, b, $0] } ?? [r, g, b]
            }
        }
        return try PixelBuffer(width: 96, height: 64, format: alpha == nil ? .rgb8 : .rgba8, bytes: bytes)
    }

    @Test func anImageAgainstItselfScores100() throws {
        let pixels = try Self.picture()
        #expect(try ImageQuality.ssimulacra2(reference: pixels, distorted: pixels) == 100)
        // The same pixels in another layout are the same image.
        #expect(try ImageQuality.ssimulacra2(reference: pixels, distorted: pixels.converted(to: .rgba8)) == 100)
    }

    @Test func lowerQualityScoresLower() throws {
        let image = Image(pixels: try Self.picture())
        let reference = try ImageQuality.Reference(image)
        let scores = try [95, 75, 40, 10].map { quality in
            try reference.ssimulacra2(
                try ImageDecoder.decode(try ImageEncoder.encode(image, as: .jpeg, quality: quality)))
        }
        #expect(scores == scores.sorted(by: >), "\(scores)")
        // (A small, noisy picture: even q95 loses much of its noise, and the PyPI reference scores it 56.94.)
        #expect(scores[0] < 100 && scores[0] > scores[3] + 50, "\(scores)")
        // The prepared reference and the one-off function agree.
        let distorted = try ImageDecoder.decode(try ImageEncoder.encode(image, as: .jpeg, quality: 75))
        #expect(try ImageQuality.ssimulacra2(reference: image, distorted: distorted) == scores[1])
    }

    @Test func sizesMustMatchAndBeAtLeastEightPixels() throws {
        let pixels = try Self.picture()
        let smaller = try PixelBuffer(width: 95, height: 64, format: .rgb8)
        #expect(
            throws: ImageQualityError.sizesDiffer(
                reference: ImageSize(width: 96, height: 64), distorted: ImageSize(width: 95, height: 64))
        ) {
            try ImageQuality.ssimulacra2(reference: pixels, distorted: smaller)
        }
        let tiny = try PixelBuffer(width: 7, height: 100, format: .rgb8)
        #expect(throws: ImageQualityError.tooSmall(width: 7, height: 100)) {
            try ImageQuality.ssimulacra2(reference: tiny, distorted: tiny)
        }
        // 8 × 8 has one scale: scored, not refused.
        let eight = try PixelBuffer(width: 8, height: 8, format: .rgb8, bytes: (0..<192).map { UInt8($0) })
        #expect(try ImageQuality.ssimulacra2(reference: eight, distorted: eight) == 100)
    }

    @Test func whatIsTransparentIsScoredOverGrey() throws {
        // Colours under alpha 0 differ entirely, yet both images look the same over any background.
        let clear = try PixelBuffer(width: 16, height: 16, format: .rgba8, bytes: [UInt8](repeating: 0, count: 1024))
        let hidden = try PixelBuffer(
            width: 16, height: 16, format: .rgba8, bytes: (0..<1024).map { $0 % 4 == 3 ? 0 : 255 })
        #expect(try ImageQuality.ssimulacra2(reference: clear, distorted: hidden) == 100)
        // Half transparent against opaque: visible over a dark background and over a light one, the lower kept.
        let opaque = try Self.picture(alpha: 255)
        let faded = try Self.picture(alpha: 128)
        let score = try ImageQuality.ssimulacra2(reference: opaque, distorted: faded)
        #expect(score < 90)
    }

    @Test func oddSizesAreScoredToTheirLastColumnAndRow() throws {
        // 101 × 77: no row a whole number of lanes, every halving rounds up (51 × 39, 26 × 20, 13 × 10).
        var bytes: [UInt8] = []
        for y in 0..<77 { for x in 0..<101 { bytes += [UInt8((x * 5) % 256), UInt8((y * 3) % 256), UInt8(x + y)] } }
        let pixels = try PixelBuffer(width: 101, height: 77, format: .rgb8, bytes: bytes)
        let distorted = try ImageDecoder.decode(try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, quality: 50))
        let score = try ImageQuality.ssimulacra2(reference: pixels, distorted: distorted.frames[0].pixels)
        #expect(score.isFinite && score < 100)
        // The last column matters: changing it alone lowers the score.
        var edited = bytes
        for y in 0..<77 { edited[(y * 101 + 100) * 3] ^= 0xFF }
        let changed = try PixelBuffer(width: 101, height: 77, format: .rgb8, bytes: edited)
        #expect(try ImageQuality.ssimulacra2(reference: pixels, distorted: changed) < 100)
        #expect(try ImageQuality.ssimulacra2(reference: pixels, distorted: try pixels.converted(to: .rgba8)) == 100)
    }

    @Test func theCubeRootIsSinglePrecision() {
        var worst: Float = 0
        for step in 0...10_000 {
            let value = Float(step) / 5_000 + 0.003
            worst = max(worst, abs(cubeRoot(value) - Float(cbrt(Double(value)))) / Float(cbrt(Double(value))))
        }
        #expect(worst < 1e-6)
        #expect(cubeRoot(0) == 0)
    }
}
