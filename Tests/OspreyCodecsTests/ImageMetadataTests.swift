import OspreyCodecs
import OspreyTesting
import Testing

/// EXIF and XMP read by the decoders and written by the encoders as the metadata policy says: nothing by default (no
/// GPS), the copyright fields alone, or everything with the orientation reset.
@Suite struct ImageMetadataTests {
    @Test func decodersReadEXIFAndXMP() throws {
        let image = try ImageDecoder.decode(try TaggedImages.jpeg())
        #expect(image.metadata.exif == TaggedImages.exif)
        #expect(image.metadata.xmp == TaggedImages.xmp)
        // Orientation 6 was applied: the 6 × 4 stored pixels are shown 4 × 6.
        #expect(image.width == 4 && image.height == 6)
        var skipping = DecodingOptions()
        skipping.readsMetadata = false
        #expect(try ImageDecoder.decode(try TaggedImages.jpeg(), options: skipping).metadata.isEmpty)
    }

    @Test("by default no output carries EXIF or XMP: no GPS survives", arguments: [ImageFormat.jpeg, .png, .webp])
    func theDefaultStripsEverything(format: ImageFormat) throws {
        let image = try ImageDecoder.decode(try TaggedImages.jpeg())
        let encoded = try ImageEncoder.encode(image, as: format)
        #expect(ImageMetadata(embeddedIn: encoded).isEmpty)
        #expect(!encoded.contains(subsequence: Array("Babbage".utf8)))
        #expect(!encoded.contains(subsequence: Array("51,30.0N".utf8)))
    }

    @Test(
        "keeping copyright keeps exactly Artist, Copyright, dc:creator and dc:rights",
        arguments: [ImageFormat.jpeg, .png, .webp])
    func copyrightKeepsExactlyThoseFields(format: ImageFormat) throws {
        var options = EncodingOptions()
        options.metadata = .copyright
        let encoded = try ImageEncoder.encode(
            try ImageDecoder.decode(try TaggedImages.jpeg()), as: format, options: options)
        let kept = ImageMetadata(embeddedIn: encoded)
        let exif = try #require(kept.exif)
        let tags = TaggedImages.ifd0Tags(exif)
        #expect(tags == [0x013B, 0x8298])
        #expect(exif.contains(subsequence: Array("Ada Lovelace".utf8)))
        #expect(exif.contains(subsequence: Array("(c) 2026 Ada".utf8)))
        let xmp = String(decoding: try #require(kept.xmp), as: UTF8.self)
        #expect(xmp.contains("<rdf:li>Ada Lovelace</rdf:li>") && xmp.contains("(c) 2026 Ada"))
        #expect(!xmp.contains("GPS") && !xmp.contains("private notes") && !xmp.contains("Orientation"))
    }

    @Test(
        "keeping everything keeps EXIF (GPS too) and XMP with the orientation reset to 1",
        arguments: [ImageFormat.jpeg, .png, .webp])
    func allResetsTheOrientation(format: ImageFormat) throws {
        var options = EncodingOptions()
        options.metadata = .all
        let encoded = try ImageEncoder.encode(
            try ImageDecoder.decode(try TaggedImages.jpeg()), as: format, options: options)
        let kept = ImageMetadata(embeddedIn: encoded)
        let exif = try #require(kept.exif)
        #expect(TaggedImages.ifd0Tags(exif) == [0x010F, 0x0112, 0x013B, 0x8298, 0x8825])
        #expect(exif.count == TaggedImages.exif.count)
        // The output's pixels are upright: decoded again, nothing turns (4 × 6 stays 4 × 6).
        let again = try ImageDecoder.decode(encoded)
        #expect(again.width == 4 && again.height == 6)
        let xmp = String(decoding: try #require(kept.xmp), as: UTF8.self)
        #expect(xmp.contains("tiff:Orientation=\"1\"") && xmp.contains("private notes"))
    }

    @Test(
        "an IFD cut short after an entry's first eight bytes is read without running past its end",
        arguments: [UInt16(0x013B), 0x0112])
    func aTruncatedEntryIsNotReadPastTheEnd(tag: UInt16) throws {
        // "II", 42, IFD0 at 8, one entry (Artist, ASCII × 3; or Orientation, SHORT × 1) whose value bytes are missing.
        let type: UInt8 = tag == 0x0112 ? 3 : 2
        let count: UInt8 = tag == 0x0112 ? 1 : 3
        let exif: [UInt8] = [
            0x49, 0x49, 42, 0, 8, 0, 0, 0, 1, 0, UInt8(tag & 0xFF), UInt8(tag >> 8), type, 0, count, 0, 0, 0,
        ]
        var image = Image(pixels: try PixelBuffer(width: 2, height: 2, format: .rgb8))
        image.metadata = ImageMetadata(exif: exif)
        for policy in [ImageMetadata.Policy.copyright, .all] {
            var options = EncodingOptions()
            options.metadata = policy
            let written = ImageMetadata(embeddedIn: try ImageEncoder.encode(image, as: .jpeg, options: options))
            // Nothing to keep for the copyright policy; everything, as it was, for .all.
            #expect(written.exif == (policy == .all ? exif : nil), "\(policy)")
        }
    }
}
