import OspreyCodecs
import OspreyTesting
import Testing

/// The corpus's verdicts (MANIFEST.tsv `expected`) against ``ImageDecoder``.
@Suite(.requiresTestData) struct ImageDecoderCorpusTests {
    /// The displayed size and frame count MANIFEST.tsv implies for a file that must decode: sizes are stored sizes,
    /// exchanged where EXIF orientation 5–8 is applied; an APNG decodes to one frame.
    static func expectation(for entry: Manifest.Entry) -> (size: ImageSize, frames: Int) {
        let stored = ImageSize(width: entry.width, height: entry.height)
        let orientation = ImageOrientation(exifValue: Int(entry.details["exif_orientation"] ?? "1") ?? 1)
        let frames = entry.details["apng_frames"] != nil ? 1 : max(entry.frames, 1)
        return (orientation.swapsDimensions ? stored.transposed : stored, frames)
    }

    @Test("every decode-ok file decodes to the manifest's size and frame count")
    func decodeOK() throws {
        let manifest = try TestData.manifest()
        let entries = manifest.entries.filter { $0.expected == .decodeOK }
        #expect(entries.count == 790)  // 788, and kimono.avif and a HEIC (see Manifest.projectVerdicts)
        for entry in entries {
            let expected = Self.expectation(for: entry)
            do {
                let image = try ImageDecoder.decode(try manifest.bytes(of: entry))
                #expect(ImageSize(width: image.width, height: image.height) == expected.size, "\(entry.path)")
                #expect(image.frames.count == expected.frames, "\(entry.path)")
                #expect(image.orientation == .up)
                #expect(image.sourceFormat == entry.imageFormat)
            } catch {
                Issue.record("\(entry.path): \(error)")
            }
        }
    }

    @Test("every must-error file throws")
    func mustError() throws {
        let manifest = try TestData.manifest()
        let entries = manifest.entries.filter { $0.expected == .mustError }
        #expect(entries.count == 401)
        for entry in entries {
            let bytes = try manifest.bytes(of: entry)
            do {
                let image = try ImageDecoder.decode(bytes)
                Issue.record("\(entry.path): decoded to \(image.width)x\(image.height), \(image.frames.count) frames")
            } catch {
                // The error is the expected outcome.
            }
        }
    }

    @Test("no-crash files decode or throw, within the limits")
    func noCrash() throws {
        let manifest = try TestData.manifest()
        var options = DecodingOptions()
        options.allowsPartialImages = true
        for entry in manifest.entries where entry.expected == .noCrash {
            let bytes = try manifest.bytes(of: entry)
            for options in [DecodingOptions(), options] {
                if let image = try? ImageDecoder.decode(bytes, options: options) {
                    #expect(image.cost <= options.limits.maxPixelCount * 4, "\(entry.path)")
                }
            }
        }
    }
}
