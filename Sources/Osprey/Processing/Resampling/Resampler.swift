import COspreyCodecShims
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
/// intermediate rows, then columns from that ring, in `Float`, four lanes per pixel. The loops over pixels are C
/// (`resample.c`: two pixels a vector where the processor has AVX2, the same sums either way); this type keeps the
/// geometry and the order.
///
/// - Each source row the output needs is read once: widened to four floats per pixel (alpha premultiplied
///   when the format has alpha, so transparent neighbours do not darken edges), then filtered
///   horizontally into the ring. The ring holds as many rows as the vertical filter reads, so the working set stays
///   in cache whatever the image size.
/// - Each output row is the weighted sum of its ring rows, then un-premultiplied, rounded and clamped to 8 bits.
/// - Weights are precomputed per axis (``ResamplingWeights``).
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
        let channels = UInt32(source.format.bytesPerPixel)
        let premultiplies: Int32 = source.format.hasAlpha ? 1 : 0
        let columns = horizontal.sourceRange
        let slots = vertical.taps
        // The ring, one widened source row, one output row: four floats a pixel.
        let ring = UnsafeMutablePointer<Float>.allocate(capacity: slots * width * 4)
        let widened = UnsafeMutablePointer<Float>.allocate(capacity: columns.count * 4)
        let sum = UnsafeMutablePointer<Float>.allocate(capacity: width * 4)
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
                        try horizontal.starts.withUnsafeBufferPointer { starts in
                            try horizontal.counts.withUnsafeBufferPointer { counts in
                                var nextRow = 0
                                for y in 0..<height {
                                    if y & 15 == 0, Task.isCancelled { throw CancellationError() }
                                    let first = vertical.starts[y]
                                    let count = vertical.counts[y]
                                    nextRow = max(nextRow, first)
                                    while nextRow < first + count {
                                        osprey_resample_widen(
                                            sourceBase + nextRow * sourceStride + columns.lowerBound * Int(channels),
                                            UInt32(columns.count), channels, premultiplies, widened)
                                        osprey_resample_filter_row(
                                            widened, starts.baseAddress!, counts.baseAddress!, columns.lowerBound,
                                            hWeights.baseAddress!, UInt32(horizontal.taps), UInt32(width),
                                            ring + (nextRow % slots) * width * 4)
                                        nextRow += 1
                                    }
                                    osprey_resample_sum_rows(
                                        ring, UInt32(slots), UInt32(width), UInt32(first),
                                        vWeights.baseAddress! + y * vertical.taps, UInt32(count), sum)
                                    osprey_resample_narrow(
                                        sum, UInt32(width), channels, premultiplies, outputBase + y * outputStride)
                                }
                            }
                        }
                    }
                }
            }
        }
        return output
    }
}
