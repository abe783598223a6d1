import OspreyTesting
import Testing

@testable import OspreyCodecs

/// The JPEG XL rows of the corpus's second manifest (`MANIFEST-modern.tsv`) against ``ImageDecoder``.
@Suite(.requiresTestData) struct JXLCorpusTests {
    static func entries() throws -> (Manifest, [Manifest.Entry]) {
        let manifest = try TestData.modernManifest()
        return (manifest, manifest.entries.filter { $0.format == "jxl" })
    }

    @Test("every JPEG XL file the manifest names is sniffed as JPEG XL")
    func sniffing() throws {
        let (manifest, entries) = try Self.entries()
        #expect(entries.count == 119)
        for entry in entries where entry.byteCount >= 12 {
            #expect(ImageFormat(sniffing: try manifest.bytes(of: entry)) == .jxl, "\(entry.path)")
        }
    }

    @Test("every decode-ok JPEG XL decodes to the manifest's size, turned by its orientation, with the listed frames")
    func decodeOK() throws {
        let (manifest, all) = try Self.entries()
        let entries = all.filter { $0.expected == .decodeOK }
        #expect(entries.count == 66)
        for entry in entries {
            do {
                let bytes = try manifest.bytes(of: entry)
                let image = try ImageDecoder.decode(bytes)
                let orientation = ImageOrientation(exifValue: Int(entry.details["orientation"] ?? "1") ?? 1)
                let stored = ImageSize(width: entry.width, height: entry.height)
                let expected = orientation.swapsDimensions ? stored.transposed : stored
                #expect(ImageSize(width: image.width, height: image.height) == expected, "\(entry.path)")
                #expect(image.frames.count == max(entry.frames, 1), "\(entry.path)")
                #expect(image.orientation == .up, "\(entry.path)")
                #expect(image.sourceFormat == .jxl, "\(entry.path)")
                let header = try ImageHeader(reading: bytes)
                #expect(header.displaySize == expected, "\(entry.path)")
                try ModernCorpus.checkListedFrames(bytes, agreeWith: image, entry.path)
            } catch {
                Issue.record("\(entry.path): \(error)")
            }
        }
    }

    @Test("every must-error JPEG XL throws; every no-crash one decodes or throws, within the limits")
    func mustErrorAndNoCrash() throws {
        let (manifest, entries) = try Self.entries()
        try ModernCorpus.checkRefusals(manifest, entries)
    }

    @Test("a size over the limits is refused from the header, before libjxl decodes a pixel")
    func sizeIsCheckedFirst() throws {
        let bytes = try TestData.bytes("valid/jxl/large/" + (try Self.largeFile()))
        var options = DecodingOptions()
        options.limits.maxPixelCount = 20_000_000
        #expect {
            try ImageDecoder.decode(bytes, options: options)
        } throws: { error in
            if case .tooManyPixels? = error as? CodecError { true } else { false }
        }
    }

    static func largeFile() throws -> String {
        let (_, entries) = try entries()
        let large = try #require(entries.first { $0.path.hasPrefix("valid/jxl/large/") })
        return String(large.path.dropFirst("valid/jxl/large/".count))
    }
}
