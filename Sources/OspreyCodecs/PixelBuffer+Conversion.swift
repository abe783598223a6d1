extension PixelBuffer {
    /// The same pixels in another layout, tightly packed: gray is replicated to RGB, RGB becomes gray by BT.601 luma,
    /// a missing alpha is opaque, and a dropped alpha is dropped (see ``flattened(red:green:blue:)`` to composite it
    /// first).
    public func converted(to targetFormat: PixelFormat) throws(CodecError) -> PixelBuffer {
        if targetFormat == format && bytesPerRow == width * format.bytesPerPixel { return self }
        return try mapPixels(to: targetFormat) { $0 }
    }

    /// The pixels composited over an opaque colour (white by default) with the alpha channel removed: gray for gray
    /// layouts, RGB otherwise. A buffer without alpha is returned as it is.
    public func flattened(red: UInt8 = 255, green: UInt8 = 255, blue: UInt8 = 255) throws(CodecError) -> PixelBuffer {
        guard format.hasAlpha else { return self }
        let background = (Int(red), Int(green), Int(blue))
        return try mapPixels(to: format == .grayAlpha8 ? .gray8 : .rgb8) { p in
            let a = Int(p.3)
            func blend(_ value: UInt8, _ under: Int) -> UInt8 {
                UInt8((Int(value) * a + under * (255 - a) + 127) / 255)
            }
            return (blend(p.0, background.0), blend(p.1, background.1), blend(p.2, background.2), 255)
        }
    }

    /// A new, tightly packed buffer in `targetFormat` whose every pixel is `transform` of this buffer's pixel, both
    /// seen as RGBA.
    private func mapPixels(
        to targetFormat: PixelFormat,
        _ transform: ((UInt8, UInt8, UInt8, UInt8)) -> (UInt8, UInt8, UInt8, UInt8)
    ) throws(CodecError) -> PixelBuffer {
        var output = try PixelBuffer(width: width, height: height, format: targetFormat)
        let (sourceFormat, sourceStride, targetStride) = (format, bytesPerRow, output.bytesPerRow)
        let (w, h) = (width, height)
        withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                for y in 0..<h {
                    for x in 0..<w {
                        let pixel = Self.readRGBA(
                            source, at: y * sourceStride + x * sourceFormat.bytesPerPixel, sourceFormat)
                        Self.write(
                            transform(pixel), to: target, at: y * targetStride + x * targetFormat.bytesPerPixel,
                            targetFormat)
                    }
                }
            }
        }
        return output
    }

    /// Whether any pixel is less than fully opaque.
    public var hasTransparentPixels: Bool {
        guard format.hasAlpha else { return false }
        let (stride, step, alpha) = (bytesPerRow, format.bytesPerPixel, format.bytesPerPixel - 1)
        let (w, h) = (width, height)
        return withUnsafeBytes { bytes in
            for y in 0..<h {
                var offset = y * stride + alpha
                for _ in 0..<w {
                    if bytes[offset] != 255 { return true }
                    offset += step
                }
            }
            return false
        }
    }

    static func readRGBA(
        _ bytes: UnsafeRawBufferPointer, at offset: Int, _ format: PixelFormat
    ) -> (UInt8, UInt8, UInt8, UInt8) {
        switch format {
        case .gray8: (bytes[offset], bytes[offset], bytes[offset], 255)
        case .grayAlpha8: (bytes[offset], bytes[offset], bytes[offset], bytes[offset + 1])
        case .rgb8: (bytes[offset], bytes[offset + 1], bytes[offset + 2], 255)
        case .rgba8: (bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3])
        }
    }

    static func write(
        _ p: (UInt8, UInt8, UInt8, UInt8), to bytes: UnsafeMutableRawBufferPointer, at offset: Int,
        _ format: PixelFormat
    ) {
        switch format {
        case .gray8:
            bytes[offset] = luma(p)
        case .grayAlpha8:
            bytes[offset] = luma(p)
            bytes[offset + 1] = p.3
        case .rgb8:
            bytes[offset] = p.0
            bytes[offset + 1] = p.1
            bytes[offset + 2] = p.2
        case .rgba8:
            bytes[offset] = p.0
            bytes[offset + 1] = p.1
            bytes[offset + 2] = p.2
            bytes[offset + 3] = p.3
        }
    }

    /// BT.601 luma, rounded: 0.299 R + 0.587 G + 0.114 B.
    private static func luma(_ p: (UInt8, UInt8, UInt8, UInt8)) -> UInt8 {
        let red = 299 * Int(p.0)
        let green = 587 * Int(p.1)
        let blue = 114 * Int(p.2)
        return UInt8((red + green + blue + 500) / 1000)
    }
}
