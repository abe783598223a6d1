import OspreyTesting
import Testing

@testable import OspreyCodecs

/// The AVIF rows of the corpus's second manifest (`MANIFEST-modern.tsv`) against ``ImageDecoder``.
@Suite(.requiresTestData) struct AVIFCorpusTests {
    /// The manifest's AVIF files: those whose `ftyp` names AVIF, as our sniffing reads them.
    static func entries() throws -> (Manifest, [Manifest.Entry]) {
        let manifest = try TestData.modernManifest()
        let entries = try manifest.entries.filter { ImageFormat(sniffing: try manifest.bytes(of: $0)) == .avif }
        return (manifest, entries)
    }

    /// The size a decode-ok file shows: the manifest's stored (`ispe`) size, exchanged where `irot` turns it by a
    /// quarter; `nil` where a `clap` crops it, which the manifest does not measure.
    static func displayedSize(of entry: Manifest.Entry) -> ImageSize? {
        let transforms = entry.details["transforms"] ?? ""
        if transforms.contains("clap") { return nil }
        let stored = ImageSize(width: entry.width, height: entry.height)
        let quarter = transforms.contains("irot=90") || transforms.contains("irot=270")
        return quarter ? stored.transposed : stored
    }

    @Test("every AVIF the manifest names is sniffed as AVIF, and no other file is")
    func sniffing() throws {
        let (manifest, entries) = try Self.entries()
        let named = manifest.entries.filter { $0.details["brand"] == "avif" || $0.details["brand"] == "avis" }
        #expect(Set(entries.map(\.path)) == Set(named.map(\.path)))
        #expect(entries.count == 92)
    }

    @Test("every decode-ok AVIF decodes to the manifest's size and frame count, upright, as its header lists")
    func decodeOK() throws {
        let (manifest, all) = try Self.entries()
        let entries = all.filter { $0.expected == .decodeOK }
        #expect(entries.count == 61)
        for entry in entries {
            do {
                let image = try ImageDecoder.decode(try manifest.bytes(of: entry))
                if let size = Self.displayedSize(of: entry) {
                    #expect(ImageSize(width: image.width, height: image.height) == size, "\(entry.path)")
                } else {
                    #expect(image.width <= max(entry.width, entry.height), "\(entry.path)")
                    #expect(image.height <= max(entry.width, entry.height), "\(entry.path)")
                }
                #expect(image.frames.count == max(entry.frames, 1), "\(entry.path)")
                #expect(image.orientation == .up, "\(entry.path)")
                #expect(image.sourceFormat == .avif, "\(entry.path)")
                let header = try ImageHeader(reading: try manifest.bytes(of: entry))
                #expect(header.displaySize == ImageSize(width: image.width, height: image.height), "\(entry.path)")
                try ModernCorpus.checkListedFrames(try manifest.bytes(of: entry), agreeWith: image, entry.path)
            } catch {
                Issue.record("\(entry.path): \(error)")
            }
        }
    }

    @Test("every must-error AVIF throws; every no-crash one decodes or throws, within the limits")
    func mustErrorAndNoCrash() throws {
        let (manifest, entries) = try Self.entries()
        try ModernCorpus.checkRefusals(manifest, entries)
    }

    @Test(
        "a sequence plays as its edit list says: once without the repeat flag, forever when indefinite or unsaid",
        arguments: [
            ("valid/avif/animated/colors-animated-8bpc.avif", 1),  // elst without the repeat flag
            ("valid/avif/animated/star-12bpc.avifs", 1),
            ("valid/avif/animated/anim.avif", 0),  // repeat flag, indefinite track duration
            ("valid/avif/animated/colors-animated-8bpc-depth-exif-xmp.avif", 0),
            ("valid/avif/animated/star-8bpc-with-alpha.avifs", 0),  // no edit list
        ])
    func loopCount(path: String, plays: Int) throws {
        let image = try ImageDecoder.decode(try TestData.bytes(path))
        #expect(image.frames.count > 1)
        #expect(image.loopCount == plays)
    }

    @Test func editListArithmetic() {
        #expect(SequenceRepetition.loopCount(trackDuration: 15, edit: nil) == 0)
        #expect(SequenceRepetition.loopCount(trackDuration: 15, edit: (false, 5)) == 1)
        #expect(SequenceRepetition.loopCount(trackDuration: 15, edit: (true, 5)) == 3)
        #expect(SequenceRepetition.loopCount(trackDuration: 16, edit: (true, 5)) == 4)  // rounded up, as libavif
        #expect(SequenceRepetition.loopCount(trackDuration: nil, edit: (true, 5)) == 0)
        #expect(SequenceRepetition.loopCount(trackDuration: 15, edit: (true, 0)) == 0)
        #expect(SequenceRepetition.loopCount(trackDuration: .max - 1, edit: (true, 1)) == 0)  // beyond counting
    }

    @Test("the 17000x17000 bomb is refused by a limit, before anything is decoded")
    func bombIsRefusedByALimit() throws {
        let bytes = try TestData.bytes("invalid/avif/bombs/17000x17000.avif")
        #expect {
            try ImageDecoder.decode(bytes)
        } throws: { error in
            switch error as? CodecError {
            case .tooManyPixels?, .limitExceeded?: true
            default: false
            }
        }
    }

    @Test("kimono's rotated and mirrored copies show what kimono.avif shows")
    func transformedCopiesShowTheOriginal() throws {
        let original = try ImageDecoder.decode(try TestData.bytes("invalid/unsupported-format/kimono.avif"))
        for name in ["rotate90", "rotate270", "mirror-horizontal", "mirror-vertical.rotate270"] {
            let image = try ImageDecoder.decode(try TestData.bytes("valid/avif/transforms/kimono.\(name).avif"))
            #expect(image.width == original.width && image.height == original.height, "\(name)")
            guard image.width == original.width, image.height == original.height else { continue }
            // The copies are encoded anew from turned pixels: the same picture within the loss of AV1.
            var difference = 0
            for y in stride(from: 0, to: image.height, by: 16) {
                zip(image.pixels.row(y), original.pixels.row(y)).forEach { difference += abs(Int($0) - Int($1)) }
            }
            let samples = (image.height + 15) / 16 * image.pixels.bytesPerRow
            #expect(Double(difference) / Double(samples) < 8, "\(name): mean difference \(difference / samples)")
        }
    }

    @Test("YCgCo-Re (lossless colour, which libavif 0.11 cannot convert) shows what the 10-bit copy shows")
    func reversibleYCgCo() throws {
        let converted = try ImageDecoder.decode(try TestData.bytes("valid/avif/misc/paris_ycgco_re.avif"))
        let reference = try ImageDecoder.decode(try TestData.bytes("valid/avif/misc/paris_10bpc.avif"))
        try #require(converted.width == reference.width && converted.height == reference.height)
        var difference = 0
        var samples = 0
        for y in 0..<converted.height {
            for (a, b) in zip(converted.pixels.row(y), reference.pixels.row(y)) {
                difference += abs(Int(a) - Int(b))
                samples += 1
            }
        }
        #expect(Double(difference) / Double(samples) < 4, "mean difference \(Double(difference) / Double(samples))")
    }

    @Test("an HDR (PQ) photo is tone-mapped to look like its SDR rendition, not washed out")
    func hdrIsToneMapped() throws {
        let sdr = try ImageDecoder.decode(try TestData.bytes("valid/avif/hdr/seine_sdr_gainmap_srgb.avif"))
        let hdrBytes = try TestData.bytes("valid/avif/hdr/seine_hdr_srgb.avif")
        let mapped = try ImageDecoder.decode(hdrBytes)
        #expect(mapped.warnings.isEmpty)
        #expect(mapped.colorProfile == nil)
        var ignore = DecodingOptions()
        ignore.colorHandling = .ignore
        let raw = try ImageDecoder.decode(hdrBytes, options: ignore)
        func meanDifference(_ a: Image, _ b: Image) throws -> Double {
            let (x, y) = (try a.pixels.converted(to: .rgb8), try b.pixels.converted(to: .rgb8))
            var total = 0
            for row in 0..<x.height {
                for (p, q) in zip(x.row(row), y.row(row)) { total += abs(Int(p) - Int(q)) }
            }
            return Double(total) / Double(x.width * x.height * 3)
        }
        let toneMapped = try meanDifference(mapped, sdr)
        let untouched = try meanDifference(raw, sdr)
        // The PQ code values read as sRGB are far from the SDR picture; tone-mapped, they are near it.
        #expect(toneMapped < 20, "tone-mapped: \(toneMapped) levels from the SDR rendition")
        #expect(toneMapped < untouched / 2, "tone-mapped \(toneMapped), untouched \(untouched)")
    }

    @Test("irot and imir compose to the EXIF orientation that shows the image the same way")
    func transformsComposeToOrientations() {
        // Checked by hand against the EXIF table: a quarter turn anticlockwise is EXIF 8, clockwise EXIF 6.
        #expect(AVIFTransforms.orientation(rotation: 0, mirror: nil) == .up)
        #expect(AVIFTransforms.orientation(rotation: 1, mirror: nil) == .left)
        #expect(AVIFTransforms.orientation(rotation: 2, mirror: nil) == .down)
        #expect(AVIFTransforms.orientation(rotation: 3, mirror: nil) == .right)
        #expect(AVIFTransforms.orientation(rotation: 0, mirror: 1) == .upMirrored)
        #expect(AVIFTransforms.orientation(rotation: 0, mirror: 0) == .downMirrored)
        // A quarter turn anticlockwise takes the top-left corner to the bottom-left; exchanging top and bottom then
        // brings it back: the transpose (EXIF 5). Exchanging left and right instead takes it to the bottom-right:
        // the transverse (EXIF 7).
        #expect(AVIFTransforms.orientation(rotation: 1, mirror: 0) == .leftMirrored)
        #expect(AVIFTransforms.orientation(rotation: 1, mirror: 1) == .rightMirrored)
    }
}
