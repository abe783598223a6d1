internal import COspreyCodecShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// PNG: every colour type and bit depth to 8 bits per channel, tRNS to alpha, interlacing, eXIf.
///
/// 8-bit, non-interlaced files whose every chunk is intact and in order take a fast path (libdeflate's inflate and
/// our own unfiltering); everything else, and every damaged file, is decoded by libpng. Both give the same pixels:
/// `usesLibpngOnly` turns the fast path off so tests can compare them.
enum PNGDecoder {
    /// Which of the two decoded a file.
    enum Path: Equatable {
        case fast
        case libpng
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        try decodeReportingPath(bytes, options: options).image
    }

    static func decodeReportingPath(
        _ bytes: UnsafeRawBufferPointer, options: DecodingOptions, usesLibpngOnly: Bool = false
    ) throws(CodecError) -> (image: Image, path: Path) {
        var request = osprey_png_decode_request()
        request.maxPixels = UInt64(clamping: options.limits.maxPixelCount)
        request.allowPartial = options.allowsPartialImages ? 1 : 0
        request.libpngOnly = usesLibpngOnly ? 1 : 0
        _ = try SharedLibraries.png  // opened here, so that a missing library is not reported as a malformed file
        var result = osprey_png_decode_result()
        let cancellation = options.cancellation
        request.cancelled = UnsafePointer(cancellation?.flag)
        let (status, message) = withExtendedLifetime(cancellation) {
            withMessageBuffer { message in
                osprey_png_decode(
                    bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &request, &result, message)
            }
        }
        switch status {
        case OSPREY_OK:
            break
        case OSPREY_LIMIT_EXCEEDED:
            let header = try? ImageHeader.readPNG(bytes)
            throw .tooManyPixels(
                width: header?.width ?? 0, height: header?.height ?? 0, limit: options.limits.maxPixelCount)
        case OSPREY_TRUNCATED:
            throw .truncated(format: .png)
        case OSPREY_CANCELLED:
            throw .cancelled
        default:
            throw .malformed(format: .png, reason: message)
        }
        var orientation = ImageOrientation.up
        if let exif = result.exif {
            orientation =
                EXIF.orientation(in: UnsafeRawBufferPointer(start: exif, count: Int(result.exifLength))) ?? .up
            free(exif)
        }
        let pixels = PixelBuffer(
            adopting: result.pixels,
            width: Int(result.width),
            height: Int(result.height),
            format: PixelFormat(components: Int(result.components)),
            bytesPerRow: Int(result.bytesPerRow)
        )
        let lookup = ColorProfile.lookup(in: bytes, format: .png, options: options)
        let image = try ImageDecoder.still(
            pixels, orientation: orientation, format: .png, options: options, profile: lookup.profile,
            warnings: lookup.warnings)
        return (image, result.fastPath != 0 ? .fast : .libpng)
    }
}

extension ImageDecoder {
    /// Decodes PNG `bytes` twice, through the fast path and through libpng alone, and says whether the outcomes are
    /// the same: equal images, or equal errors. The PNG fuzzer calls it on every input, so that an input the fast
    /// path reads differently from libpng is reported like a crash.
    @_spi(Fuzzing)
    public static func pngDecodersAgree(on bytes: UnsafeRawBufferPointer, options: DecodingOptions) -> Bool {
        let fast = Result { () throws(CodecError) in try PNGDecoder.decode(bytes, options: options) }
        let libpng = Result { () throws(CodecError) in
            try PNGDecoder.decodeReportingPath(bytes, options: options, usesLibpngOnly: true).image
        }
        switch (fast, libpng) {
        case (.success(let fast), .success(let libpng)): return fast == libpng
        case (.failure(let fast), .failure(let libpng)): return fast == libpng
        default: return false
        }
    }
}
