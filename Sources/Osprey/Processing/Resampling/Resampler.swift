import OspreyCodecs

/// A rectangle of source pixels, in fractional pixel coordinates: what a resize samples from.
public struct PixelRect: Sendable, Hashable {
    /// The left edge, in source pixels.
    public var x: Double
    /// The top edge, in source pixels.
    public var y: Double
    /// The width, in source pixels.
    public var width: Double
    /// The height, in source pixels.
    public var height: Double

    /// Makes a region of the source.
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// Separable resampling (the resize, the proxy's hot path): rows first into a small ring of
/// intermediate rows, then columns from that ring, in `Float`, four lanes per pixel.
///
/// - Each source row the output needs is read once: widened to one `SIMD4<Float>` per pixel (alpha premultiplied
///   when the format has alpha, so transparent neighbours do not darken edges), then filtered
///   horizontally into the ring. The ring holds as many rows as the vertical filter reads, so the working set stays
///   in cache whatever the image size.
/// - Each output row is the weighted sum of its ring rows, then un-premultiplied, rounded and clamped to 8 bits.
/// - Weights are precomputed per axis (``ResamplingWeights``), and the loops run over raw pointers.
///
/// One resampler serves every frame of an animation: the weights depend only on the geometry.
struct Resampler {
    let sourceWidth: Int
    let sourceHeight: Int
    let width: Int
    let height: Int
    private let horizontal: ResamplingWeights
    private let vertical: ResamplingWeights

    /// Resamples the rectangle `rect` of `sourceWidth` × `sourceHeight` buffers to `width` × `height` with `filter`.
    init(filter: ResamplingFilter, sourceWidth: Int, sourceHeight: Int, rect: PixelRect, width: Int, height: Int) {
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.width = width
        self.height = height
        horizontal = ResamplingWeights.cached(
            filter: filter, sourceLength: sourceWidth, start: rect.x, length: rect.width, outputLength: width)
        vertical = ResamplingWeights.cached(
            filter: filter, sourceLength: sourceHeight, start: rect.y, length: rect.height, outputLength: height)
    }

    /// `source` (of the resampler's source size) resampled, in its pixel format.
    ///
    /// - Throws: `CancellationError` when the task is cancelled (checked every 16 output rows).
    func resample(_ source: PixelBuffer) throws -> PixelBuffer {
        precondition(source.width == sourceWidth && source.height == sourceHeight, "a buffer of another size")
        let (horizontal, vertical, width, height) = (horizontal, vertical, width, height)
        var output = try PixelBuffer(width: width, height: height, format: source.format)
        let layout = Layout(format: source.format, premultiplies: source.format.hasAlpha)
        let columns = horizontal.sourceRange
        let ring = Ring(rows: vertical.taps, width: width)
        let widened = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: columns.count)
        let sum = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: width)
        defer {
            ring.deallocate()
            widened.deallocate()
            sum.deallocate()
        }
        let sourceStride = source.bytesPerRow
        let outputStride = output.bytesPerRow
        try source.withUnsafeBytes { sourceBytes in
            try output.withUnsafeMutableBytes { outputBytes in
                let sourceBase = sourceBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let outputBase = outputBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                try horizontal.weights.withUnsafeBufferPointer { hWeights in
                    try vertical.weights.withUnsafeBufferPointer { vWeights in
                        var nextRow = 0
                        for y in 0..<height {
                            if y & 15 == 0, Task.isCancelled { throw CancellationError() }
                            let first = vertical.starts[y]
                            let count = vertical.counts[y]
                            nextRow = max(nextRow, first)
                            while nextRow < first + count {
                                layout.widen(
                                    sourceBase + nextRow * sourceStride + columns.lowerBound * layout.bytesPerPixel,
                                    count: columns.count, into: widened)
                                Self.filterRow(
                                    widened, offset: columns.lowerBound, weights: horizontal,
                                    table: hWeights.baseAddress!, into: ring.row(nextRow), width: width)
                                nextRow += 1
                            }
                            Self.sumRows(
                                ring, first: first, count: count, weights: vWeights.baseAddress! + y * vertical.taps,
                                into: sum, width: width)
                            layout.narrow(sum, count: width, into: outputBase + y * outputStride)
                        }
                    }
                }
            }
        }
        return output
    }

    /// One row filtered horizontally: output pixel `x` is the weighted sum of its source pixels.
    @inline(__always)
    private static func filterRow(
        _ pixels: UnsafeMutablePointer<SIMD4<Float>>, offset: Int, weights: ResamplingWeights,
        table: UnsafePointer<Float>, into row: UnsafeMutablePointer<SIMD4<Float>>, width: Int
    ) {
        let taps = weights.taps
        weights.starts.withUnsafeBufferPointer { starts in
            weights.counts.withUnsafeBufferPointer { counts in
                for x in 0..<width {
                    let p = pixels + (starts[x] - offset)
                    let w = table + x * taps
                    let count = counts[x]
                    // Two sums, to halve the chain of dependent additions.
                    var a = SIMD4<Float>()
                    var b = SIMD4<Float>()
                    var j = 0
                    while j + 1 < count {
                        a += p[j] * w[j]
                        b += p[j + 1] * w[j + 1]
                        j += 2
                    }
                    if j < count { a += p[j] * w[j] }
                    row[x] = a + b
                }
            }
        }
    }

    /// An output row: the weighted sum of `count` ring rows from source row `first`.
    @inline(__always)
    private static func sumRows(
        _ ring: Ring, first: Int, count: Int, weights: UnsafePointer<Float>,
        into sum: UnsafeMutablePointer<SIMD4<Float>>, width: Int
    ) {
        let top = ring.row(first)
        let w0 = weights[0]
        for x in 0..<width { sum[x] = top[x] * w0 }
        var j = 1
        while j + 1 < count {
            let (r0, r1) = (ring.row(first + j), ring.row(first + j + 1))
            let (w0, w1) = (weights[j], weights[j + 1])
            for x in 0..<width { sum[x] += r0[x] * w0 + r1[x] * w1 }
            j += 2
        }
        if j < count {
            let r = ring.row(first + j)
            let w = weights[j]
            for x in 0..<width { sum[x] += r[x] * w }
        }
    }
}

extension Resampler {
    /// The horizontally filtered rows the vertical filter reads: source row `r` lives in slot `r % rows`, and the
    /// rows in use (at most `rows`) never collide because each output row starts at or after the previous one's
    /// first row.
    struct Ring {
        let storage: UnsafeMutablePointer<SIMD4<Float>>
        let rows: Int
        let width: Int

        init(rows: Int, width: Int) {
            self.rows = rows
            self.width = width
            storage = .allocate(capacity: rows * width)
        }

        @inline(__always)
        func row(_ sourceRow: Int) -> UnsafeMutablePointer<SIMD4<Float>> {
            storage + (sourceRow % rows) * width
        }

        func deallocate() { storage.deallocate() }
    }

    /// How a pixel format maps onto the four lanes: colour in lanes 0–2 (gray in lane 0), alpha always in lane 3.
    struct Layout {
        let format: PixelFormat
        let premultiplies: Bool

        var bytesPerPixel: Int { format.bytesPerPixel }

        /// `count` pixels from `source` as lanes, premultiplied when ``premultiplies``.
        @inline(__always)
        func widen(_ source: UnsafePointer<UInt8>, count: Int, into pixels: UnsafeMutablePointer<SIMD4<Float>>) {
            switch format {
            case .rgba8:
                // (Lane by lane: the standard library's vector conversions are generic and far slower.)
                for i in 0..<count {
                    let p = source + 4 * i
                    let v = SIMD4(Float(p[0]), Float(p[1]), Float(p[2]), Float(p[3]))
                    pixels[i] = premultiplies ? v * SIMD4(v.w, v.w, v.w, 255) * (1 / 255) : v
                }
            case .rgb8:
                for i in 0..<count {
                    let p = source + 3 * i
                    pixels[i] = SIMD4(Float(p[0]), Float(p[1]), Float(p[2]), 255)
                }
            case .grayAlpha8:
                for i in 0..<count {
                    let (g, a) = (Float(source[2 * i]), Float(source[2 * i + 1]))
                    pixels[i] = SIMD4(premultiplies ? g * a * (1 / 255) : g, 0, 0, a)
                }
            case .gray8:
                for i in 0..<count { pixels[i] = SIMD4(Float(source[i]), 0, 0, 255) }
            }
        }

        /// `count` lane pixels back to bytes at `target`: un-premultiplied, rounded, clamped.
        @inline(__always)
        func narrow(_ pixels: UnsafeMutablePointer<SIMD4<Float>>, count: Int, into target: UnsafeMutablePointer<UInt8>)
        {
            let low = SIMD4<Float>(repeating: 0)
            let high = SIMD4<Float>(repeating: 255)
            for i in 0..<count {
                var v = pixels[i]
                if premultiplies {
                    let a = min(max(v.w, 0), 255)
                    let scale: Float = a > 0 ? 255 / a : 0
                    v = v * SIMD4(scale, scale, scale, 1)
                }
                // Rounded half up, clamped, then truncated lane by lane (see widen).
                v = (v + 0.5).clamped(lowerBound: low, upperBound: high)
                switch format {
                case .rgba8:
                    target[4 * i] = UInt8(v.x)
                    target[4 * i + 1] = UInt8(v.y)
                    target[4 * i + 2] = UInt8(v.z)
                    target[4 * i + 3] = UInt8(v.w)
                case .rgb8:
                    target[3 * i] = UInt8(v.x)
                    target[3 * i + 1] = UInt8(v.y)
                    target[3 * i + 2] = UInt8(v.z)
                case .grayAlpha8:
                    target[2 * i] = UInt8(v.x)
                    target[2 * i + 1] = UInt8(v.w)
                case .gray8:
                    target[i] = UInt8(v.x)
                }
            }
        }
    }
}
