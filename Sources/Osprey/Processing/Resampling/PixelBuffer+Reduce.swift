import OspreyCodecs

extension PixelBuffer {
    /// How many blocks of `factor` pixels cover `length` (the last may be partial).
    static func reduced(_ length: Int, by factor: Int) -> Int {
        (length + factor - 1) / factor
    }

    /// The pixels averaged over blocks of `factorX` × `factorY` (the last blocks of a row or column may be partial
    /// and are averaged over the pixels they have): the quick first step of a large reduction, as Pillow's `reduce`
    /// and libvips' `shrink`. Colour is averaged weighted by alpha, so transparent pixels do not darken the average.
    ///
    /// - Throws: `CancellationError` when the task is cancelled (checked every 64 output rows).
    func reduced(byX factorX: Int, y factorY: Int) throws -> PixelBuffer {
        let (outputWidth, outputHeight) = (Self.reduced(width, by: factorX), Self.reduced(height, by: factorY))
        var output = try PixelBuffer(width: outputWidth, height: outputHeight, format: format)
        let channels = format.bytesPerPixel
        let alpha = format.hasAlpha ? channels - 1 : -1
        let rowLength = width * channels
        let (sourceStride, targetStride, sourceWidth, sourceHeight) = (bytesPerRow, output.bytesPerRow, width, height)
        // One row of column sums (colour premultiplied by alpha when there is alpha: up to 255 × 255 × rows).
        let sums = UnsafeMutablePointer<UInt32>.allocate(capacity: rowLength)
        defer { sums.deallocate() }
        try withUnsafeBytes { source in
            try output.withUnsafeMutableBytes { target in
                let sourceBase = source.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let targetBase = target.baseAddress!.assumingMemoryBound(to: UInt8.self)
                for oy in 0..<outputHeight {
                    if oy & 63 == 0, Task.isCancelled { throw CancellationError() }
                    let firstRow = oy * factorY
                    let rows = min(factorY, sourceHeight - firstRow)
                    sums.initialize(repeating: 0, count: rowLength)
                    for r in 0..<rows {
                        let row = sourceBase + (firstRow + r) * sourceStride
                        if alpha < 0 {
                            for i in 0..<rowLength { sums[i] &+= UInt32(row[i]) }
                        } else {
                            for x in 0..<sourceWidth {
                                let p = row + x * channels
                                let s = sums + x * channels
                                let a = UInt32(p[alpha])
                                for c in 0..<alpha { s[c] &+= UInt32(p[c]) &* a }
                                s[alpha] &+= a
                            }
                        }
                    }
                    let targetRow = targetBase + oy * targetStride
                    for ox in 0..<outputWidth {
                        let firstColumn = ox * factorX
                        let columns = min(factorX, sourceWidth - firstColumn)
                        let count = UInt32(columns * rows)
                        for c in 0..<channels {
                            var total: UInt32 = 0
                            for k in 0..<columns { total &+= sums[(firstColumn + k) * channels + c] }
                            sums[ox * channels + c] = total  // ox ≤ firstColumn: already read
                        }
                        let block = sums + ox * channels
                        let out = targetRow + ox * channels
                        if alpha < 0 {
                            for c in 0..<channels { out[c] = UInt8((block[c] + count / 2) / count) }
                        } else {
                            let a = block[alpha]
                            for c in 0..<alpha { out[c] = a == 0 ? 0 : UInt8(min((block[c] + a / 2) / a, 255)) }
                            out[alpha] = UInt8((a + count / 2) / count)
                        }
                    }
                }
            }
        }
        return output
    }
}
