internal import COspreyCodecShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// PNG through libpng: every colour type and bit depth to 8 bits per channel, tRNS to alpha, interlacing, eXIf.
enum PNGDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        var request = osprey_png_decode_request()
        request.maxPixels = UInt64(clamping: options.limits.maxPixelCount)
        request.allowPartial = options.allowsPartialImages ? 1 : 0
        var result = osprey_png_decode_result()
        let (status, message) = withMessageBuffer { message in
            osprey_png_decode(
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &request, &result, message)
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
        return try ImageDecoder.still(pixels, orientation: orientation, format: .png, options: options)
    }
}
