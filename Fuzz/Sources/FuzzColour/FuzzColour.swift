import FuzzSupport
import OspreyCodecs

/// The harness's main (SwiftPM links `main` to `FuzzColour_main`): libFuzzer feeds colour profiles to the colour stage.
///
/// An input that is a JPEG, PNG or WebP (the seeds are the corpus's colour-managed files) is decoded as it is, so
/// that the profile's container is fuzzed too: JPEG's numbered `APP2` segments, PNG's compressed `iCCP`, WebP's
/// `ICCP`; and its EXIF and XMP go through the metadata writers. Any other input is taken as the profile itself and embedded in the `APP2` segments of a small RGB JPEG
/// and a small gray one, so that every byte of it reaches Little CMS and our transform tables.
@_cdecl("FuzzColour_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        let bytes = UnsafeRawBufferPointer(start: data, count: count)
        switch ImageFormat(sniffing: bytes) {
        case .jpeg, .png, .webp: decodeEveryWay(bytes)
        default: fuzzProfile(Array(bytes))
        }
        return 0
    }
}

/// Decodes `bytes` converting to sRGB and keeping the profile, and reads the profile without decoding.
private func decodeEveryWay(_ bytes: UnsafeRawBufferPointer) {
    _ = ColorProfile(embeddedIn: bytes)
    var options = DecodingOptions()
    // The profile is read and its transform made before the pixel limit is checked: a small limit keeps the fuzzer
    // on the profile path instead of on decoding large photos.
    options.limits.maxPixelCount = 1 << 18
    options.firstFrameOnly = true
    _ = try? ImageDecoder.decode(bytes, options: options)
    options.colorHandling = .keepProfile
    if let image = try? ImageDecoder.decode(bytes, options: options) {
        // The kept profile goes out again (the encoders' APP2, iCCP and ICCP writers), with the file's EXIF and XMP
        // as the copyright and keep-all policies rewrite them.
        for policy in [ImageMetadata.Policy.copyright, .all] {
            var encoding = EncodingOptions()
            encoding.metadata = policy
            _ = try? ImageEncoder.encode(image, as: .jpeg, options: encoding)
            _ = try? ImageEncoder.encode(image, as: .webp, options: encoding)
        }
    }
}

/// Embeds `profile` in an RGB and a gray JPEG and decodes both with conversion to sRGB.
private func fuzzProfile(_ profile: [UInt8]) {
    _ = ColorProfile(data: profile)
    for base in [Base.rgb, Base.gray].compactMap({ $0 }) {
        let jpeg = withProfile(profile, in: base)
        _ = try? ImageDecoder.decode(jpeg)
    }
}

/// Two small JPEGs, made once: a 16 × 16 gradient in colour and in gray.
private enum Base {
    static let rgb = make(.rgb8)
    static let gray = make(.gray8)

    private static func make(_ format: PixelFormat) -> [UInt8]? {
        guard var pixels = try? PixelBuffer(width: 16, height: 16, format: format) else { return nil }
        pixels.withUnsafeMutableBytes { raw in
            for index in raw.indices { raw[index] = UInt8(truncatingIfNeeded: index &* 37) }
        }
        return try? ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, quality: 90)
    }
}

/// `jpeg` with `profile` in `APP2 ICC_PROFILE` segments right after SOI, split as a writer splits it.
private func withProfile(_ profile: [UInt8], in jpeg: [UInt8]) -> [UInt8] {
    let chunkLength = 65_519
    let chunks = stride(from: 0, to: max(profile.count, 1), by: chunkLength).map {
        profile[$0..<min($0 + chunkLength, profile.count)]
    }
    var out = Array(jpeg[0..<2])
    for (index, chunk) in chunks.enumerated() {
        let length = 2 + 12 + 2 + chunk.count
        out += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)]
        out += Array("ICC_PROFILE".utf8) + [0]
        out += [UInt8(truncatingIfNeeded: index + 1), UInt8(truncatingIfNeeded: chunks.count)]
        out += chunk
    }
    return out + jpeg[2...]
}
