import Foundation
import OspreyTesting
import Testing

@testable import OspreyCodecs

/// `ImageEncoder.sourceBytes(_:of:as:metadata:)`: a source's own bytes, its metadata stripped without re-encoding.
@Suite struct SourcePassThroughTests {
    /// A 96 × 64 picture with EXIF (a GPS position), XMP and an sRGB profile, encoded as `format` keeping them all.
    static func tagged(_ format: ImageFormat) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for y in 0..<64 {
            for x in 0..<96 { bytes += [UInt8(x * 2), UInt8(y * 3), UInt8((x * y) % 256)] }
        }
        var image = Image(pixels: try PixelBuffer(width: 96, height: 64, format: .rgb8, bytes: bytes))
        image.metadata = ImageMetadata(
            exif: SyntheticEXIF.photo(littleEndian: true), xmp: Array("<x:xmpmeta>secret</x:xmpmeta>".utf8))
        image.colorProfile = ColorProfile.sRGB
        var options = EncodingOptions()
        options.metadata = .all
        return try ImageEncoder.encode(image, as: format, options: options)
    }

    @Test(
        "stripped: fewer bytes, no EXIF or XMP, the profile and every pixel kept",
        arguments: [
            ImageFormat.jpeg, .png, .webp,
        ])
    func metadataIsStrippedWithoutReencoding(format: ImageFormat) throws {
        let source = try Self.tagged(format)
        let decoded = try ImageDecoder.decode(source)
        #expect(decoded.metadata.exif != nil && decoded.metadata.xmp != nil)
        let stripped = try #require(ImageEncoder.sourceBytes(source, of: decoded, as: format, metadata: .strip))
        #expect(stripped.count < source.count)
        let again = try ImageDecoder.decode(stripped)
        #expect(again.metadata.isEmpty)
        #expect(again.pixels == decoded.pixels)
        #expect(again.sourceFormat == format)
        var keeping = DecodingOptions()
        keeping.colorHandling = .keepProfile
        #expect(try ImageDecoder.decode(stripped, options: keeping).colorProfile != nil)
        // Whole with every field kept; never with some of them (only an encode chooses fields).
        #expect(ImageEncoder.sourceBytes(source, of: decoded, as: format, metadata: .all) == source)
        #expect(ImageEncoder.sourceBytes(source, of: decoded, as: format, metadata: .copyright) == nil)
    }

    @Test("cut, corrupted or lying bytes give nil or a file, never a crash")
    func hostileBytesAreRefused() throws {
        for format in [ImageFormat.jpeg, .png, .webp] {
            let source = try Self.tagged(format)
            let strip: ([UInt8]) -> [UInt8]? =
                switch format {
                case .jpeg: MetadataStripping.jpeg
                case .png: MetadataStripping.png
                default: MetadataStripping.webp
                }
            for length in 0..<source.count { _ = strip(Array(source.prefix(length))) }
            var random = SystemRandomNumberGenerator()
            for _ in 0..<2000 {
                var damaged = source
                for _ in 0..<4 { damaged[Int.random(in: 0..<damaged.count, using: &random)] = .random(in: 0...255) }
                if let stripped = strip(damaged) { #expect(stripped.count <= damaged.count + 1) }
            }
            // Lengths and sizes that claim more than there is, or nothing at all.
            var lying = source
            for index in [4, 5, 6, 7, 12, 13, 16, 17] where index < lying.count { lying[index] = 0xFF }
            _ = strip(lying)
            #expect(strip(Array(source.prefix(12))) == nil)
        }
    }

    @Test func onlyTheSameUprightPicturePasses() throws {
        let jpeg = try Self.tagged(.jpeg)
        let decoded = try ImageDecoder.decode(jpeg)
        // Another format asked, another size, cut bytes.
        #expect(ImageEncoder.sourceBytes(jpeg, of: decoded, as: .webp, metadata: .strip) == nil)
        let smaller = Image(
            pixels: try PixelBuffer(width: 10, height: 10, format: .rgb8, bytes: Array(repeating: 0, count: 300)))
        #expect(ImageEncoder.sourceBytes(jpeg, of: smaller, as: .jpeg, metadata: .strip) == nil)
        #expect(
            ImageEncoder.sourceBytes(Array(jpeg.prefix(jpeg.count / 2)), of: decoded, as: .jpeg, metadata: .strip)
                == nil)
    }

    @Test("an EXIF orientation to apply keeps the source out", .requiresTestData)
    func orientedSourcesAreNotPassed() throws {
        let webp = try TestData.bytes("valid/webp/exif-orientation/hopper_orientation_6.webp")
        let decoded = try ImageDecoder.decode(webp)
        #expect(ImageEncoder.sourceBytes(webp, of: decoded, as: .webp, metadata: .strip) == nil)
        let upright = try TestData.bytes("valid/jpeg/baseline/fixture.jpeg")
        let stripped = try #require(
            ImageEncoder.sourceBytes(upright, of: try ImageDecoder.decode(upright), as: .jpeg, metadata: .strip))
        #expect(try ImageDecoder.decode(stripped).pixels == ImageDecoder.decode(upright).pixels)
    }
}
