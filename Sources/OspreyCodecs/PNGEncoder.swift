internal import COspreyCodecShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// PNG through libpng (in the shim target, for its long jumps), in the buffer's own layout: gray, gray+alpha, RGB or
/// RGBA, 8 bits per channel.
enum PNGEncoder {
    static func encode(_ pixels: PixelBuffer, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        _ = try SharedLibraries.png
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt64 = 0
        let (status, message) = pixels.withUnsafeBytes { bytes in
            withMessageBuffer { message in
                osprey_png_encode(
                    bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(pixels.width),
                    UInt32(pixels.height), UInt32(pixels.format.bytesPerPixel), UInt64(pixels.bytesPerRow),
                    Int32(options.pngCompressionLevel), &output, &size, message)
            }
        }
        guard status == OSPREY_OK, let output else { throw .encodingFailed(format: .png, reason: message) }
        defer { free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}
