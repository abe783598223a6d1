import Foundation
import OspreyTesting
import Testing

@testable import OspreyCodecs

#if canImport(Glibc)
import Glibc
#endif

/// Colour management against references nobody here computed: lcms2's own conversions of the corpus's colour files
/// (`references/colour/`, made by libvips' `icc_transform`, relative colorimetric, to sRGB; its README says how).
@Suite struct ColorManagementTests {
    /// The JPEG, PNG and WebP files of `valid/colour/` (the other formats arrive with their decoders).
    static let colourFiles = [
        "P1133897_AdobeRGB.webp", "P3-sRGB-color-bars.jpg", "P3-sRGB-color-ring.png", "R2020-sRGB-color-bars.png",
        "cmyk-icc.jpg", "grayscale-icc.jpg", "jpg-24bit-icc-adobe-rgb.jpg", "red-at-12-oclock-with-color-profile.jpg",
        "red-at-12-oclock-with-color-profile.png", "rgb-to-gbr-test.jpg",
    ]

    /// `testdata/references/colour`, beside the `images` folder.
    static var referencesDirectory: String? {
        TestData.imagesDirectory.map {
            URL(fileURLWithPath: $0).deletingLastPathComponent().path + "/references/colour"
        }
    }

    @Test(
        "every JPEG, PNG and WebP of valid/colour/ decodes to the reference's sRGB: mean ΔE2000 ≤ 1, 99th percentile ≤ 3",
        .requiresTestData, arguments: colourFiles)
    func matchesTheReferences(file: String) async throws {
        try await onOwnThread { try Self.compareWithReference(file) }
    }

    static let modernColourFiles = [
        "basic.heic", "img_751.heic", "lossy_with_icc.jxl", "red-at-12-oclock-with-color-profile-10bpc.avif",
        "red-at-12-oclock-with-color-profile-8bpc.avif", "red-at-12-oclock-with-color-profile-lossy.avif",
        "small_grayscale_patches_modular_with_icc.jxl", "with_icc.jxl",
    ]

    /// Every AVIF, HEIC and JPEG XL of valid/colour/ against its reference: mean ΔE2000 ≤ 1 for all; the 99th
    /// percentile ≤ 3 levels, except for the AVIFs, whose references libheif decoded with nearest-neighbour chroma
    /// upsampling where Osprey (as browsers) upsamples bilinearly: at the sharp colour edges of these test charts the
    /// two differ by up to 13 levels (measured: 10, 13 and 13; 6, 7 and 3 with nearest neighbour).
    @Test(
        "every AVIF, HEIC and JPEG XL of valid/colour/ decodes to the reference's sRGB: mean ΔE2000 ≤ 1",
        .requiresTestData, arguments: modernColourFiles)
    func modernFormatsMatchTheReferences(file: String) async throws {
        // Two of the JPEG XL files embed a profile that is sRGB's in all but name: converting changes nothing.
        let srgbLike = ["with_icc.jxl", "small_grayscale_patches_modular_with_icc.jxl"].contains(file)
        try await onOwnThread {
            try Self.compareWithReference(
                file, percentile99: file.hasSuffix(".avif") ? 16 : 3, profileMatters: !srgbLike)
        }
    }

    static func compareWithReference(_ file: String, percentile99: Int = 3, profileMatters: Bool = true) throws {
        let source = try TestData.bytes("valid/colour/" + file)
        let directory = try #require(Self.referencesDirectory)
        let reference = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file + ".png"))
        // The references keep the stored orientation and carry no profile of their own.
        var options = DecodingOptions()
        options.keepsStoredOrientation = true
        let decoded = try ImageDecoder.decode(source, options: options)
        #expect(decoded.colorProfile == nil)
        var plain = DecodingOptions()
        plain.colorHandling = .ignore
        let expected = try ImageDecoder.decode(reference, options: plain)
        #expect(decoded.width == expected.width && decoded.height == expected.height)
        let comparison = ColorComparison(decoded.pixels, expected.pixels)
        #expect(comparison.meanDeltaE <= 1.0, "\(file): mean ΔE2000 \(comparison.meanDeltaE)")
        #expect(
            comparison.percentile99 <= percentile99, "\(file): 99th percentile \(comparison.percentile99) levels")
        // And the comparison can fail: the same file decoded without its profile is far from the reference.
        var ignoring = options
        ignoring.colorHandling = .ignore
        let unmanaged = ColorComparison(
            try ImageDecoder.decode(source, options: ignoring).pixels, expected.pixels, stride: 7)
        #expect(unmanaged.meanDeltaE > 1.0 || unmanaged.percentile99 > 3 || !profileMatters, "\(file): \(unmanaged)")
    }

    @Test(
        "a file without a profile, or with an sRGB one, decodes exactly as with colour management off",
        .requiresTestData)
    func untaggedAndSRGBAreUntouched() async throws {
        try await onOwnThread { try Self.checkUntaggedFiles() }
    }

    static func checkUntaggedFiles() throws {
        let manifest = try TestData.manifest()
        var ignoring = DecodingOptions()
        ignoring.colorHandling = .ignore
        var (untouched, profiled, warned) = (0, 0, 0)
        for entry in manifest.entries where entry.expected == .decodeOK {
            let bytes = try manifest.bytes(of: entry)
            var managed = try ImageDecoder.decode(bytes)
            let plain = try ImageDecoder.decode(bytes, options: ignoring)
            let profile = ColorProfile(embeddedIn: bytes)
            if profile == nil || profile?.isSRGB == true {
                // A profile that cannot be used leaves the image as if it had none, and says so.
                if !managed.warnings.isEmpty { warned += 1 }
                managed.warnings = []
                #expect(managed == plain, "\(entry.path)")
                untouched += 1
            } else {
                profiled += 1
            }
        }
        #expect(warned == 6)
        // The corpus's JPEG, PNG, GIF and WebP files: nearly all untagged or sRGB.
        #expect(untouched + profiled == 790)
        #expect(untouched > 700)
    }
}

extension ColorManagementTests {
    @Test(
        "P3 in, the profile kept: every encoder writes the same profile, and lossless ones the decoded pixels",
        .requiresTestData)
    func keptProfilesRoundTrip() throws {
        let source = try TestData.bytes("valid/colour/P3-sRGB-color-bars.jpg")
        var keeping = DecodingOptions()
        keeping.colorHandling = .keepProfile
        let image = try ImageDecoder.decode(source, options: keeping)
        let profile = try #require(image.colorProfile)
        #expect(profile.name == "DCI-P3-D65-2_2-Gamma" && profile.colorSpace == .rgb && !profile.isSRGB)
        #expect(ColorProfile(embeddedIn: source) == profile)
        var lossless = EncodingOptions()
        lossless.isLossless = true
        for format in [ImageFormat.jpeg, .png, .webp] {
            let encoded = try ImageEncoder.encode(image, as: format, options: lossless)
            // Then the output carries the input's profile, byte for byte
            #expect(ColorProfile(embeddedIn: encoded) == profile, "\(format)")
            let again = try ImageDecoder.decode(encoded, options: keeping)
            #expect(again.colorProfile == profile, "\(format)")
            if format != .jpeg { #expect(again.pixels == image.pixels, "\(format)") }
        }
        // And without keeping it: sRGB pixels, no profile, unless sRGB is asked to be tagged
        let converted = try ImageDecoder.decode(source)
        #expect(converted.colorProfile == nil)
        let plain = try ImageEncoder.encode(converted, as: .png)
        #expect(ColorProfile(embeddedIn: plain) == nil)
        #expect(try ImageDecoder.decode(plain).pixels == converted.pixels)
        var tagging = EncodingOptions()
        tagging.tagsSRGB = true
        for format in [ImageFormat.jpeg, .png, .webp] {
            let tagged = try ImageEncoder.encode(converted, as: format, options: tagging)
            let sRGB = try #require(ColorProfile(embeddedIn: tagged), "\(format)")
            #expect(sRGB.isSRGB && sRGB == ColorProfile.sRGB && sRGB.data.count < 1_000, "\(format)")
        }
    }

    @Test("a gray profile is kept in gray JPEG and PNG output, and left out of WebP, which is RGB", .requiresTestData)
    func grayProfilesGoWhereTheyFit() throws {
        var keeping = DecodingOptions()
        keeping.colorHandling = .keepProfile
        let image = try ImageDecoder.decode(try TestData.bytes("valid/colour/grayscale-icc.jpg"), options: keeping)
        #expect(image.pixelFormat == .gray8 && image.colorProfile?.colorSpace == .gray)
        for format in [ImageFormat.jpeg, .png] {
            #expect(ColorProfile(embeddedIn: try ImageEncoder.encode(image, as: format)) == image.colorProfile)
        }
        #expect(ColorProfile(embeddedIn: try ImageEncoder.encode(image, as: .webp)) == nil)
    }
}

extension ColorManagementTests {
    /// The stored pixels and the profile of every RGB and gray file of `valid/colour/` (CMYK is converted whatever
    /// the options say, so it has no stored pixels to convert).
    static func storedPixels() throws -> [(file: String, pixels: PixelBuffer, profile: ColorProfile)] {
        var keeping = DecodingOptions()
        keeping.colorHandling = .keepProfile
        keeping.keepsStoredOrientation = true
        return try colourFiles.compactMap { file in
            let image = try ImageDecoder.decode(try TestData.bytes("valid/colour/" + file), options: keeping)
            return image.colorProfile.map { (file, image.pixels, $0) }
        }
    }

    @Test(
        "RGB matrix/shaper and gray profiles convert through tables, within a level of Little CMS on every pixel",
        .requiresTestData)
    func tablesAgreeWithLittleCMS() async throws {
        try await onOwnThread {
            for (file, stored, profile) in try Self.storedPixels() {
                let transform = ColorConversion.transform(
                    for: .init(profile: profile, layout: .init(stored.format)))
                #expect(transform?.usesTables == true, "\(file)")
                var tables = stored
                var littleCMS = stored
                #expect(ColorConversion.convertToSRGB(&tables, from: profile))
                #expect(ColorConversion.convertToSRGB(&littleCMS, from: profile, allowsTables: false))
                #expect(tables != stored, "\(file)")
                let within = tables.withUnsafeBytes { a in
                    littleCMS.withUnsafeBytes { b in a.indices.allSatisfy { abs(Int(a[$0]) - Int(b[$0])) <= 1 } }
                }
                #expect(within, "\(file)")
            }
        }
    }

    @Test(
        "200 conversions on 8 threads, through 18 transforms made as they run, give what one at a time gives",
        .requiresTestData)
    func concurrentConversionsMatchSequentialOnes() async throws {
        // At most 600 rows of each (enough for one, 1900 wide, to be converted on two threads), to keep the test
        // quick under ThreadSanitizer.
        let stored = try Self.storedPixels().map { file, pixels, profile in
            let rows = min(pixels.height, 600)
            let top = try pixels.withUnsafeBytes { bytes in
                try PixelBuffer(
                    width: pixels.width, height: rows, format: pixels.format,
                    bytes: Array(bytes.prefix(rows * pixels.bytesPerRow)))
            }
            return (file: file, pixels: top, profile: profile)
        }
        // Each file through its tables and through Little CMS: 18 transforms.
        let jobs = (0..<200).map { (index: $0 % stored.count, tables: $0 % (2 * stored.count) < stored.count) }
        @Sendable func convert(_ job: (index: Int, tables: Bool)) -> PixelBuffer {
            var pixels = stored[job.index].pixels
            _ = ColorConversion.convertToSRGB(&pixels, from: stored[job.index].profile, allowsTables: job.tables)
            return pixels
        }
        ColorConversion.removeAllTransforms()
        let threads = 8
        let concurrent = try await withThrowingTaskGroup(of: [(Int, PixelBuffer)].self) { group in
            for thread in 0..<threads {
                group.addTask {
                    try await onOwnThread {
                        stride(from: thread, to: jobs.count, by: threads).map { ($0, convert(jobs[$0])) }
                    }
                }
            }
            return try await group.reduce(into: [Int: PixelBuffer]()) { results, batch in
                for (index, pixels) in batch { results[index] = pixels }
            }
        }
        ColorConversion.removeAllTransforms()
        // On a thread of its own too: minutes under AddressSanitizer, which must not hold a cooperative thread that
        // other suites' network tests are waiting for.
        let sequential = try await onOwnThread { jobs.map(convert) }
        #expect(concurrent.count == jobs.count)
        for index in jobs.indices {
            #expect(concurrent[index] == sequential[index], "job \(index): \(stored[jobs[index].index].file)")
        }
    }
}

/// Profiles that cannot be used: the image decodes as untagged, and says why.
@Suite struct UnusableProfileTests {
    /// A 16 × 8 gradient JPEG, in colour or gray.
    static func jpeg(gray: Bool = false) throws -> [UInt8] {
        let format: PixelFormat = gray ? .gray8 : .rgb8
        let count = 16 * 8 * format.bytesPerPixel
        let pixels = try PixelBuffer(
            width: 16, height: 8, format: format, bytes: (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7) })
        return try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, quality: 90)
    }

    /// `jpeg` with APP2 ICC_PROFILE segments after SOI: `chunks[i]` numbered `i + 1` of `count`.
    static func tagged(_ jpeg: [UInt8], chunks: [[UInt8]], count: Int? = nil) -> [UInt8] {
        var out = Array(jpeg[0..<2])
        for (index, chunk) in chunks.enumerated() {
            let length = 2 + 14 + chunk.count
            out += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("ICC_PROFILE".utf8) + [0]
            out += [UInt8(index + 1), UInt8(count ?? chunks.count)] + chunk
        }
        return out + jpeg[2...]
    }

    @Test func aDamagedProfileDecodesAsUntaggedWithAWarning() throws {
        let plain = try Self.jpeg()
        let garbage = Array("acsp".utf8) + (0..<300).map { UInt8(truncatingIfNeeded: $0 * 31) }
        let damaged = Self.tagged(plain, chunks: [garbage])
        let image = try ImageDecoder.decode(damaged)
        #expect(image.pixels == (try ImageDecoder.decode(plain)).pixels)
        #expect(
            image.warnings == [.colorProfileIgnored(reason: "it is damaged or not an ICC profile Little CMS can read")])
        #expect(try ImageDecoder.decode(plain).warnings.isEmpty)
        var ignoring = DecodingOptions()
        ignoring.colorHandling = .ignore
        #expect(try ImageDecoder.decode(damaged, options: ignoring).warnings.isEmpty)
    }

    @Test func gammaAndChromaticitiesOfSRGBAreSRGB() throws {
        // A gray ramp (0, 16, 32, ...) with gAMA and cHRM chunks, as many encoders write them.
        let ramp = (0..<16).map { UInt8($0 * 16) }
        let rows = [UInt8(0)] + ramp.flatMap { [$0, $0, $0] }
        let data = SyntheticImages.zlibStored(rows)
        func tagged(gamma: Int, white: (Int, Int)) -> [UInt8] {
            let bigEndian = { (value: Int) in (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
            let chromaticities = [white.0, white.1, 64000, 33000, 30000, 60000, 15000, 6000].flatMap(bigEndian)
            let chunks = [
                SyntheticImages.pngChunk("gAMA", bigEndian(gamma)), SyntheticImages.pngChunk("cHRM", chromaticities),
            ]
            return SyntheticImages.png(width: 16, height: 1, colorType: 2, imageData: data, before: chunks)
        }
        // sRGB's gamma (1/2.2 as PNG writes it) and its D65 white and primaries: sRGB, the samples kept as they are.
        let sRGB = try ImageDecoder.decode(tagged(gamma: 45455, white: (31270, 32900)))
        #expect(sRGB.colorProfile == nil && sRGB.warnings.isEmpty)
        #expect(sRGB.pixels.row(0) == ramp.flatMap { [$0, $0, $0] })
        // A linear gamma, or another white point, is converted to sRGB: the ramp's 16 is no longer 16.
        for other in [tagged(gamma: 100000, white: (31270, 32900)), tagged(gamma: 45455, white: (34570, 35850))] {
            let converted = try ImageDecoder.decode(other)
            #expect(converted.pixels.row(0)[3] != 16)
        }
    }

    @Test func segmentsThatDoNotAddUpAreReported() throws {
        let missing = Self.tagged(try Self.jpeg(), chunks: [Array(repeating: 1, count: 200)], count: 2)
        let image = try ImageDecoder.decode(missing)
        #expect(image.colorProfile == nil)
        #expect(
            image.warnings == [
                .colorProfileIgnored(reason: "its APP2 ICC_PROFILE segments are incomplete or out of order")
            ])
    }

    @Test("an RGB profile on a gray JPEG converts nothing and says so", .requiresTestData)
    func aProfileThatDoesNotFitThePixels() throws {
        let p3 = try #require(ColorProfile(embeddedIn: try TestData.bytes("valid/colour/P3-sRGB-color-bars.jpg")))
        let plain = try Self.jpeg(gray: true)
        let image = try ImageDecoder.decode(Self.tagged(plain, chunks: [p3.data]))
        #expect(image.pixels == (try ImageDecoder.decode(plain)).pixels)
        #expect(image.warnings == [.colorProfileIgnored(reason: "a rgb profile cannot convert gray8 pixels")])
    }
}

/// How far two images' colours are apart: CIEDE2000 per pixel (sRGB to Lab, D65) and per-channel level differences.
struct ColorComparison {
    var meanDeltaE: Double
    /// The 99th percentile of the per-channel absolute differences, in 8-bit levels.
    var percentile99: Int

    /// Compares every `stride`-th pixel of each row (all by default).
    ///
    /// Each distinct pair of colours is converted and compared once: the charts have a few hundred colours and the
    /// photos repeat most of theirs, and the comparison runs under AddressSanitizer in unoptimized code.
    init(_ a: PixelBuffer, _ b: PixelBuffer, stride: Int = 1) {
        var deltaSum = 0.0
        var histogram = [Int](repeating: 0, count: 256)
        var count = 0
        var deltas: [UInt64: Double] = [:]
        let (sizeA, sizeB) = (a.format.bytesPerPixel, b.format.bytesPerPixel)
        a.withUnsafeBytes { bytesA in
            b.withUnsafeBytes { bytesB in
                for y in 0..<a.height {
                    for x in Swift.stride(from: 0, to: a.width, by: stride) {
                        count += 1
                        let p = Self.rgb(bytesA, offset: y * a.bytesPerRow + x * sizeA, size: sizeA)
                        let q = Self.rgb(bytesB, offset: y * b.bytesPerRow + x * sizeB, size: sizeB)
                        let key = UInt64(p) << 24 | UInt64(q)
                        if let delta = deltas[key] {
                            deltaSum += delta
                        } else {
                            let delta = Self.deltaE2000(Self.lab(p), Self.lab(q))
                            deltas[key] = delta
                            deltaSum += delta
                        }
                        histogram[abs(Int(p >> 16) - Int(q >> 16))] += 1
                        histogram[abs(Int(p >> 8 & 0xFF) - Int(q >> 8 & 0xFF))] += 1
                        histogram[abs(Int(p & 0xFF) - Int(q & 0xFF))] += 1
                    }
                }
            }
        }
        meanDeltaE = deltaSum / Double(count)
        var seen = 0
        percentile99 = 255
        for (level, number) in histogram.enumerated() {
            seen += number
            if Double(seen) >= 0.99 * Double(count * 3) {
                percentile99 = level
                break
            }
        }
    }

    /// The pixel's R, G, B (gray repeated) as 0xRRGGBB, alpha ignored.
    static func rgb(_ bytes: UnsafeRawBufferPointer, offset: Int, size: Int) -> UInt32 {
        let (r, g, b) =
            size <= 2
            ? (bytes[offset], bytes[offset], bytes[offset]) : (bytes[offset], bytes[offset + 1], bytes[offset + 2])
        return UInt32(r) << 16 | UInt32(g) << 8 | UInt32(b)
    }

    /// sRGB's curve undone, for each 8-bit level.
    static let linear: [Double] = (0...255).map { level in
        let c = Double(level) / 255
        return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
    }

    static func lab(_ rgb: UInt32) -> (Double, Double, Double) {
        let (r, g, b) = (linear[Int(rgb >> 16 & 0xFF)], linear[Int(rgb >> 8 & 0xFF)], linear[Int(rgb & 0xFF)])
        let x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
        let y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
        let z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883
        func f(_ t: Double) -> Double { t > 216.0 / 24389 ? cbrt(t) : (24389.0 / 27 * t + 16) / 116 }
        return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))
    }

    /// CIEDE2000 (Sharma, Wu, Dalal 2005).
    static func deltaE2000(_ one: (Double, Double, Double), _ two: (Double, Double, Double)) -> Double {
        let (l1, a1, b1) = one
        let (l2, a2, b2) = two
        let c1 = (a1 * a1 + b1 * b1).squareRoot()
        let c2 = (a2 * a2 + b2 * b2).squareRoot()
        let cMean = (c1 + c2) / 2
        let g = 0.5 * (1 - (pow(cMean, 7) / (pow(cMean, 7) + pow(25, 7))).squareRoot())
        let (a1p, a2p) = ((1 + g) * a1, (1 + g) * a2)
        let (c1p, c2p) = ((a1p * a1p + b1 * b1).squareRoot(), (a2p * a2p + b2 * b2).squareRoot())
        func hue(_ b: Double, _ a: Double) -> Double {
            guard a != 0 || b != 0 else { return 0 }
            let h = atan2(b, a) * 180 / .pi
            return h < 0 ? h + 360 : h
        }
        let (h1p, h2p) = (hue(b1, a1p), hue(b2, a2p))
        let deltaLp = l2 - l1
        let deltaCp = c2p - c1p
        var deltahp = 0.0
        if c1p * c2p != 0 {
            deltahp = h2p - h1p
            if deltahp > 180 { deltahp -= 360 } else if deltahp < -180 { deltahp += 360 }
        }
        let deltaHp = 2 * (c1p * c2p).squareRoot() * sin(deltahp / 2 * .pi / 180)
        let lMean = (l1 + l2) / 2
        let cpMean = (c1p + c2p) / 2
        var hpMean = h1p + h2p
        if c1p * c2p != 0 {
            if abs(h1p - h2p) <= 180 {
                hpMean /= 2
            } else {
                hpMean = h1p + h2p < 360 ? (h1p + h2p + 360) / 2 : (h1p + h2p - 360) / 2
            }
        }
        let t =
            1 - 0.17 * cos((hpMean - 30) * .pi / 180) + 0.24 * cos(2 * hpMean * .pi / 180)
            + 0.32 * cos((3 * hpMean + 6) * .pi / 180) - 0.20 * cos((4 * hpMean - 63) * .pi / 180)
        let deltaTheta = 30 * exp(-pow((hpMean - 275) / 25, 2))
        let rc = 2 * (pow(cpMean, 7) / (pow(cpMean, 7) + pow(25, 7))).squareRoot()
        let sl = 1 + 0.015 * pow(lMean - 50, 2) / (20 + pow(lMean - 50, 2)).squareRoot()
        let sc = 1 + 0.045 * cpMean
        let sh = 1 + 0.015 * cpMean * t
        let rt = -sin(2 * deltaTheta * .pi / 180) * rc
        let lTerm = deltaLp / sl
        let cTerm = deltaCp / sc
        let hTerm = deltaHp / sh
        return (lTerm * lTerm + cTerm * cTerm + hTerm * hTerm + rt * cTerm * hTerm).squareRoot()
    }
}
