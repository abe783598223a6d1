import OspreyTesting
import Testing

@testable import OspreyCodecs

/// The HEIC and HEIF rows of the corpus's second manifest (`MANIFEST-modern.tsv`) against ``ImageDecoder``.
@Suite(.requiresTestData) struct HEICCorpusTests {
    /// The manifest's files that our sniffing reads as HEIC.
    static func entries() throws -> (Manifest, [Manifest.Entry]) {
        let manifest = try TestData.modernManifest()
        let entries = try manifest.entries.filter { ImageFormat(sniffing: try manifest.bytes(of: $0)) == .heic }
        return (manifest, entries)
    }

    @Test("no AVIF file is sniffed as HEIC; every file with a HEIF or neutral major brand and no AVIF one is")
    func sniffing() throws {
        let (manifest, entries) = try Self.entries()
        let sniffed = Set(entries.map(\.path))
        for entry in manifest.entries where entry.format == "isobmff" {
            let brand = entry.details["brand"] ?? ""
            if ["avif", "avis"].contains(brand) { #expect(!sniffed.contains(entry.path), "\(entry.path)") }
            if ["heic", "heix", "mif1"].contains(brand) { #expect(sniffed.contains(entry.path), "\(entry.path)") }
        }
        #expect(entries.count >= 19)  // at least the decode-ok ones
    }

    @Test("every decode-ok HEIC decodes to the manifest's size, upright, with a header that agrees")
    func decodeOK() throws {
        let (manifest, all) = try Self.entries()
        let entries = all.filter { $0.expected == .decodeOK }
        #expect(entries.count == 19)
        for entry in entries {
            do {
                let bytes = try manifest.bytes(of: entry)
                let image = try ImageDecoder.decode(bytes)
                if let size = AVIFCorpusTests.displayedSize(of: entry) {
                    #expect(ImageSize(width: image.width, height: image.height) == size, "\(entry.path)")
                }
                #expect(image.frames.count == 1, "\(entry.path)")
                #expect(image.orientation == .up, "\(entry.path)")
                #expect(image.sourceFormat == .heic, "\(entry.path)")
                let header = try ImageHeader(reading: bytes)
                #expect(header.displaySize == ImageSize(width: image.width, height: image.height), "\(entry.path)")
            } catch {
                Issue.record("\(entry.path): \(error)")
            }
        }
    }

    @Test("every must-error HEIC throws; every no-crash one decodes or throws, within the limits")
    func mustErrorAndNoCrash() throws {
        let (manifest, entries) = try Self.entries()
        try ModernCorpus.checkRefusals(manifest, entries)
    }

    @Test("the AVIF whose derived images form a cycle is refused, and never reaches libheif")
    func avifNeverReachesLibheif() throws {
        let bytes = try TestData.bytes("invalid/avif/malformed/white_iden_cycle.avif")
        #expect(ImageFormat(sniffing: bytes) == .avif)
        #expect(throws: CodecError.self) {
            try bytes.withUnsafeBytes { raw in try HEIFDecoder.decode(raw, options: DecodingOptions()) }
        }
    }
}

/// EXIF and XMP read from AVIF and HEIC items.
@Suite(.requiresTestData) struct HEIFMetadataTests {
    @Test(
        "AVIF's and HEIC's EXIF comes out from its TIFF header on, as the other formats give it",
        arguments: [
            "valid/avif/hdr/seine_hdr_srgb.avif", "valid/heic/basic/gopher-front.heif", "valid/colour/img_751.heic",
        ])
    func exifStartsAtTheTIFFHeader(path: String) throws {
        let bytes = try TestData.bytes(path)
        let exif = try #require(try ImageDecoder.decode(bytes).metadata.exif, "\(path)")
        let header = Array(exif.prefix(4))
        #expect(header == [0x49, 0x49, 0x2A, 0x00] || header == [0x4D, 0x4D, 0x00, 0x2A], "\(path): \(header)")
        #expect(ImageMetadata(embeddedIn: bytes).exif == exif)
    }
}
