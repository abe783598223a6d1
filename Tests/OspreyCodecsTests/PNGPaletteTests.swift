import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// PNG palettes: a picture of at most 256 colours written in one pixel for pixel, and `pngPaletteQuality`'s
/// quantisation by libimagequant for the others.
@Suite struct PNGPaletteTests {
    /// The IHDR's colour type and bit depth.
    static func header(_ png: [UInt8]) -> (colorType: UInt8, bitDepth: UInt8) {
        (png[25], png[24])
    }

    /// How many distinct RGBA colours `pixels` hold.
    static func colourCount(_ pixels: PixelBuffer) throws -> Int {
        let rgba = try pixels.converted(to: .rgba8)
        var colours = Set<UInt32>()
        rgba.withUnsafeBytes { bytes in
            for y in 0..<rgba.height {
                for x in 0..<rgba.width {
                    let offset = y * rgba.bytesPerRow + 4 * x
                    colours.insert(
                        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
                            | UInt32(bytes[offset + 3]))
                }
            }
        }
        return colours.count
    }

    /// `count` colours in bands across a 64×40 picture, some of them transparent or half so when `alpha`.
    static func bands(_ count: Int, alpha: Bool) throws -> PixelBuffer {
        var rgba: [UInt8] = []
        for y in 0..<40 {
            for x in 0..<64 {
                let band = (x + 64 * y) * count / (64 * 40)
                let opacity: UInt8 = alpha ? [0, 128, 255][band % 3] : 255
                rgba += [UInt8(band % 256), UInt8(band / 256 * 128 + band % 7 * 9), UInt8(band * 13 % 256), opacity]
            }
        }
        return try PixelBuffer(width: 64, height: 40, format: .rgba8, bytes: rgba)
    }

    @Test(
        "a picture of at most 256 colours is written in a palette of the fewest bits, pixel for pixel",
        arguments: [(2, 1), (4, 2), (16, 4), (200, 8), (256, 8)])
    func fewColoursBecomeAnExactPalette(count: Int, bits: UInt8) throws {
        for alpha in [false, true] {
            for format in alpha ? [PixelFormat.rgba8] : [.rgb8, .rgba8] {
                let pixels = try Self.bands(count, alpha: alpha).converted(to: format)
                #expect(try Self.colourCount(pixels) == count)
                let encoded = try ImageEncoder.encode(Image(pixels: pixels), as: .png)
                #expect(Self.header(encoded) == (3, bits), "\(count) colours, \(format)")
                let decoded = try ImageDecoder.decode(encoded)
                // The same pixels in the same layout: an alpha channel, even all opaque, reads back as one.
                #expect(decoded.pixels == pixels, "\(count) colours, \(format)")
            }
        }
    }

    @Test func moreColoursStayTruecolourGrayIsQuantisedAsColour() throws {
        let many = try Self.bands(257, alpha: false).converted(to: .rgb8)
        let encoded = try ImageEncoder.encode(Image(pixels: many), as: .png)
        #expect(Self.header(encoded) == (2, 8))
        #expect(try ImageDecoder.decode(encoded).pixels == many)
        // Gray stays gray losslessly; asked for a palette, it is quantised like colour, its entries still gray.
        let gray = try Self.bands(300, alpha: false).converted(to: .gray8)
        let grayPNG = try ImageEncoder.encode(Image(pixels: gray), as: .png)
        #expect(Self.header(grayPNG) == (0, 8))
        #expect(try ImageDecoder.decode(grayPNG).pixels == gray)
        var options = EncodingOptions()
        options.pngPaletteQuality = 30
        let quantised = try ImageEncoder.encode(Image(pixels: gray), as: .png, options: options)
        #expect(Self.header(quantised).colorType == 3)
        let decoded = try ImageDecoder.decode(quantised).pixels
        #expect(try Self.colourCount(decoded) <= 256)
        #expect(psnr(try decoded.converted(to: .gray8), gray) > 25)
        var tinted = 0
        for y in 0..<decoded.height {
            let row = decoded.row(y)
            for x in 0..<decoded.width where row[3 * x] != row[3 * x + 1] || row[3 * x] != row[3 * x + 2] {
                tinted += 1
            }
        }
        #expect(tinted == 0)
    }

    @Test(
        "a photo is quantised to at most 256 colours that stay close, in fewer bytes, alpha kept",
        .requiresTestData, arguments: ["valid/png/photos/hibiscus.primitive.png", "valid/png/photos/normal_alpha.png"])
    func photosAreQuantised(path: String) throws {
        let source = try ImageDecoder.decode(try TestData.bytes(path))
        let lossless = try ImageEncoder.encode(source, as: .png)
        for quality in [90, 60, 20] {
            var options = EncodingOptions()
            options.pngPaletteQuality = quality
            let encoded = try ImageEncoder.encode(source, as: .png, options: options)
            #expect(Self.header(encoded).colorType == 3)
            #expect(encoded.count < lossless.count, "q\(quality): \(encoded.count) B, lossless \(lossless.count) B")
            let decoded = try ImageDecoder.decode(encoded)
            #expect(try Self.colourCount(decoded.pixels) <= 256)
            #expect(decoded.pixels.format == source.pixels.format)
            // Dithered, the picture stays close to the source as it would be seen (over a mid gray, where it has
            // alpha): above 25 dB for the lowest quality asked, 30 for the others.
            let distance = psnr(try Self.overGray(decoded.pixels), try Self.overGray(source.pixels))
            #expect(distance > (quality == 20 ? 25 : 30), "q\(quality): \(distance) dB")
            if source.pixels.format.hasAlpha {
                // Transparency is quantised too, never lost: what was clear stays (nearly) clear, what was opaque
                // (nearly) opaque.
                let (original, quantised) = (try source.pixels.converted(to: .rgba8), decoded.pixels)
                var (clear, opaque, clearKept, opaqueKept) = (0, 0, 0, 0)
                for y in 0..<original.height {
                    let (a, b) = (original.row(y), quantised.row(y))
                    for x in 0..<original.width {
                        if a[4 * x + 3] == 0 { clear += 1; clearKept += b[4 * x + 3] < 16 ? 1 : 0 }
                        if a[4 * x + 3] == 255 { opaque += 1; opaqueKept += b[4 * x + 3] > 239 ? 1 : 0 }
                    }
                }
                #expect(clearKept == clear, "q\(quality): \(clearKept) of \(clear) clear pixels")
                #expect(opaque > 0 && opaqueKept == opaque, "q\(quality): \(opaqueKept) of \(opaque) opaque")
            }
        }
    }

    /// `pixels` composited over a mid gray, as RGB.
    static func overGray(_ pixels: PixelBuffer) throws -> PixelBuffer {
        let rgba = try pixels.converted(to: .rgba8)
        var rgb: [UInt8] = []
        rgb.reserveCapacity(rgba.width * rgba.height * 3)
        for y in 0..<rgba.height {
            let row = rgba.row(y)
            for x in 0..<rgba.width {
                let alpha = Int(row[4 * x + 3])
                for channel in 0..<3 {
                    rgb.append(UInt8((Int(row[4 * x + channel]) * alpha + 128 * (255 - alpha) + 127) / 255))
                }
            }
        }
        return try PixelBuffer(width: rgba.width, height: rgba.height, format: .rgb8, bytes: rgb)
    }
}
