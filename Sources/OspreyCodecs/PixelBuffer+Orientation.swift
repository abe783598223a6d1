extension PixelBuffer {
    /// The pixels turned as `orientation` says, so they display upright: a new, tightly packed buffer (the same one
    /// for `.up`). Orientations 5–8 exchange width and height.
    public func applying(_ orientation: ImageOrientation) throws(CodecError) -> PixelBuffer {
        if orientation == .up { return self }
        let size =
            orientation.swapsDimensions
            ? ImageSize(width: height, height: width) : ImageSize(width: width, height: height)
        var output = try PixelBuffer(width: size.width, height: size.height, format: format)
        switch format.bytesPerPixel {
        case 1: copy(as: UInt8.self, into: &output, orientation)
        case 2: copy(as: UInt16.self, into: &output, orientation)
        case 3: copy(as: (UInt8, UInt8, UInt8).self, into: &output, orientation)
        default: copy(as: UInt32.self, into: &output, orientation)
        }
        return output
    }

    /// Writes every output pixel from the stored pixel that displays there; `Pixel` is a type of exactly one pixel's
    /// size, so each pixel moves as one load and one store.
    private func copy<Pixel: BitwiseCopyable>(
        as _: Pixel.Type, into output: inout PixelBuffer, _ orientation: ImageOrientation
    ) {
        let (w, h) = (width, height)
        let sourceStride = bytesPerRow
        let targetStride = output.bytesPerRow
        let pixelSize = MemoryLayout<Pixel>.size
        let (outputWidth, outputHeight) = (output.width, output.height)
        withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                for y in 0..<outputHeight {
                    let row = y * targetStride
                    for x in 0..<outputWidth {
                        // (sx, sy): the stored pixel shown at display position (x, y). EXIF's definitions: e.g. for 6
                        // the stored top row is the displayed right column.
                        let (sx, sy): (Int, Int)
                        switch orientation {
                        case .up: (sx, sy) = (x, y)
                        case .upMirrored: (sx, sy) = (w - 1 - x, y)
                        case .down: (sx, sy) = (w - 1 - x, h - 1 - y)
                        case .downMirrored: (sx, sy) = (x, h - 1 - y)
                        case .leftMirrored: (sx, sy) = (y, x)
                        case .right: (sx, sy) = (y, h - 1 - x)
                        case .rightMirrored: (sx, sy) = (w - 1 - y, h - 1 - x)
                        case .left: (sx, sy) = (w - 1 - y, x)
                        }
                        let pixel = source.loadUnaligned(
                            fromByteOffset: sy * sourceStride + sx * pixelSize, as: Pixel.self)
                        target.storeBytes(of: pixel, toByteOffset: row + x * pixelSize, as: Pixel.self)
                    }
                }
            }
        }
    }
}
