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
    /// size, so each pixel moves as one load and one store. The stored pixel under display position (x, y) is at byte
    /// `origin + x * xStep + y * yStep`; the output is walked in 64 × 64 tiles so that a turn (orientations 5–8),
    /// which reads stored columns, still reads each cache line of them once.
    private func copy<Pixel: BitwiseCopyable>(
        as _: Pixel.Type, into output: inout PixelBuffer, _ orientation: ImageOrientation
    ) {
        let pixel = MemoryLayout<Pixel>.size
        let stride = bytesPerRow
        let last = (column: (width - 1) * pixel, row: (height - 1) * stride)
        // EXIF's definitions: e.g. for 6 (.right) the stored top row is the displayed right column.
        let (origin, xStep, yStep): (Int, Int, Int)
        switch orientation {
        case .up: (origin, xStep, yStep) = (0, pixel, stride)
        case .upMirrored: (origin, xStep, yStep) = (last.column, -pixel, stride)
        case .down: (origin, xStep, yStep) = (last.row + last.column, -pixel, -stride)
        case .downMirrored: (origin, xStep, yStep) = (last.row, pixel, -stride)
        case .leftMirrored: (origin, xStep, yStep) = (0, stride, pixel)
        case .right: (origin, xStep, yStep) = (last.row, -stride, pixel)
        case .rightMirrored: (origin, xStep, yStep) = (last.row + last.column, -stride, -pixel)
        case .left: (origin, xStep, yStep) = (last.column, stride, -pixel)
        }
        let targetStride = output.bytesPerRow
        let (outputWidth, outputHeight) = (output.width, output.height)
        let tile = 64
        withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                for tileY in Swift.stride(from: 0, to: outputHeight, by: tile) {
                    for tileX in Swift.stride(from: 0, to: outputWidth, by: tile) {
                        for y in tileY..<min(tileY + tile, outputHeight) {
                            let from = origin + y * yStep
                            let to = y * targetStride
                            for x in tileX..<min(tileX + tile, outputWidth) {
                                let value = source.loadUnaligned(fromByteOffset: from + x * xStep, as: Pixel.self)
                                target.storeBytes(of: value, toByteOffset: to + x * pixel, as: Pixel.self)
                            }
                        }
                    }
                }
            }
        }
    }
}
