internal import COspreyCodecShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// PNG through libpng (in the shim target, for its long jumps), in the buffer's own layout: gray, gray+alpha, RGB or
/// RGBA, 8 bits per channel; RGB or RGBA of at most 256 colours as those colours in a palette, and RGB or RGBA
/// quantised to one by libimagequant when ``EncodingOptions/pngPaletteQuality`` asks for it.
enum PNGEncoder {
    /// libimagequant's speed, pngquant's default (the benchmark beside pngquant runs both at it).
    static let paletteSpeed: Int32 = 4

    static func encode(_ pixels: PixelBuffer, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        _ = try SharedLibraries.png
        let components = UInt32(pixels.format.bytesPerPixel)
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt64 = 0
        let (status, message) = pixels.withUnsafeBytes { bytes in
            withMessageBuffer { message in
                let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
                let (width, height, rowBytes) = (
                    UInt32(pixels.width), UInt32(pixels.height), UInt64(pixels.bytesPerRow)
                )
                if let quality = options.palettePNGQuality, components >= 3 {
                    return osprey_png_encode_palette(
                        base, width, height, components, rowBytes, Int32(quality), paletteSpeed, &output, &size, message
                    )
                }
                return osprey_png_encode(
                    base, width, height, components, rowBytes, Int32(options.pngCompressionLevel), &output, &size,
                    message)
            }
        }
        guard status == OSPREY_OK, let output else { throw .encodingFailed(format: .png, reason: message) }
        defer { free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}
