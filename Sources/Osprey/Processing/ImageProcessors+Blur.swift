public import OspreyCodecs

extension ImageProcessors {
    /// A Gaussian blur of standard deviation `radius` pixels (CSS `blur()`'s and Core Image's radius), approximated
    /// by three successive box blurs whose widths are chosen so that their variance equals the Gaussian's (Wells,
    /// 1986; Kuckir's sizes). Each box pass keeps a running sum along rows, then down columns, so the cost per pixel
    /// does not depend on the radius. Edges repeat their outermost pixels; alpha is premultiplied while blurring.
    public struct Blur: ImageProcessing, Hashable {
        /// The Gaussian's standard deviation, in pixels.
        public var radius: Double

        /// Makes a blur of `radius` (a Gaussian's standard deviation, in pixels).
        public init(radius: Double) {
            self.radius = max(radius, 0)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "blur(\(radius))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let boxes = Self.boxWidths(sigma: radius)
            guard boxes.contains(where: { $0 > 1 }) else { return image }
            return try image.mappingFrames { pixels in try pixels.boxBlurred(widths: boxes) }
        }

        /// Blurs wider than this are this one: at a standard deviation of 10,000 pixels any image that fits in memory
        /// is one flat colour already, and an infinite one would have no box width.
        static let maximumRadius = 10_000.0

        /// The widths of three boxes (odd, at least 1) whose successive blurs approximate a Gaussian of `sigma`
        /// (NaN and values under 0 blur nothing; values over ``maximumRadius`` are that).
        static func boxWidths(sigma: Double, count: Int = 3) -> [Int] {
            guard sigma > 0 else { return Array(repeating: 1, count: count) }
            let sigma = min(sigma, maximumRadius)
            let n = Double(count)
            let ideal = (12 * sigma * sigma / n + 1).squareRoot()
            var lower = Int(ideal.rounded(.down))
            if lower % 2 == 0 { lower -= 1 }
            lower = max(lower, 1)
            let upper = lower + 2
            let l = Double(lower)
            let smaller = Int(((12 * sigma * sigma - n * l * l - 4 * n * l - 3 * n) / (-4 * l - 4)).rounded())
            return (0..<count).map { $0 < smaller ? lower : upper }
        }
    }
}

extension PixelBuffer {
    /// The pixels blurred by one box of each width in turn, rows then columns, alpha premultiplied meanwhile.
    func boxBlurred(widths: [Int]) throws -> PixelBuffer {
        var output = try converted(to: format)  // tightly packed, and ours to write
        let (w, h, channels) = (width, height, format.bytesPerPixel)
        let alpha = format.hasAlpha ? channels - 1 : nil
        let stride = w * channels
        try output.withUnsafeMutableBytes { bytes in
            let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            if let alpha { Self.premultiply(base, count: w * h, channels: channels, alpha: alpha) }
            let line = UnsafeMutablePointer<UInt8>.allocate(capacity: max(w, h) * channels)
            let sums = UnsafeMutablePointer<Int>.allocate(capacity: stride)
            defer {
                line.deallocate()
                sums.deallocate()
            }
            for width in widths where width > 1 {
                try Task.checkCancellation()
                let radius = width / 2
                let scale = ((1 << 24) + width / 2) / width  // multiply and shift instead of dividing
                for y in 0..<h {
                    Self.blurRow(
                        base + y * stride, count: w, channels: channels, radius: radius, scale: scale, scratch: line)
                }
                try Task.checkCancellation()
                Self.blurColumns(
                    base, width: w, height: h, channels: channels, radius: radius, scale: scale, sums: sums)
            }
            if let alpha { Self.unpremultiply(base, count: w * h, channels: channels, alpha: alpha) }
        }
        return output
    }

    /// One box along a row, in place: each value becomes the mean of the `2 × radius + 1` around it, edges repeated.
    private static func blurRow(
        _ row: UnsafeMutablePointer<UInt8>, count: Int, channels: Int, radius: Int, scale: Int,
        scratch: UnsafeMutablePointer<UInt8>
    ) {
        scratch.update(from: row, count: count * channels)
        let last = count - 1
        for c in 0..<channels {
            func at(_ x: Int) -> Int { Int(scratch[min(max(x, 0), last) * channels + c]) }
            var sum = 0
            for x in -radius...radius { sum += at(x) }
            for x in 0..<count {
                row[x * channels + c] = UInt8(min((sum * scale + (1 << 23)) >> 24, 255))
                sum += at(x + radius + 1) - at(x - radius)
            }
        }
    }

    /// One box down every column at once, in place: a running sum per column, advanced a row at a time, so memory
    /// is read in row order.
    private static func blurColumns(
        _ base: UnsafeMutablePointer<UInt8>, width: Int, height: Int, channels: Int, radius: Int, scale: Int,
        sums: UnsafeMutablePointer<Int>
    ) {
        let stride = width * channels
        let last = height - 1
        func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + min(max(y, 0), last) * stride }
        // The rows above the one being written are overwritten already: keep the originals the window still needs,
        // in a ring one row longer than the window, so the row entering and the row leaving never share a slot.
        let window = 2 * radius + 2
        let kept = UnsafeMutablePointer<UInt8>.allocate(capacity: window * stride)
        defer { kept.deallocate() }
        func original(_ y: Int) -> UnsafeMutablePointer<UInt8> {
            let clamped = min(max(y, 0), last)
            return kept + (clamped % window) * stride
        }
        for y in 0...min(radius, last) { original(y).update(from: row(y), count: stride) }
        for i in 0..<stride { sums[i] = 0 }
        for y in -radius...radius {
            let source = y < 0 ? original(0) : original(y)
            for i in 0..<stride { sums[i] += Int(source[i]) }
        }
        for y in 0..<height {
            let target = base + y * stride
            let entering = y + radius + 1
            // Save the entering row before anything overwrites it (it is below y, so still original).
            if entering <= last { original(entering).update(from: row(entering), count: stride) }
            let leaving = original(y - radius)
            let incoming = original(entering)
            for i in 0..<stride {
                target[i] = UInt8(min((sums[i] * scale + (1 << 23)) >> 24, 255))
                sums[i] += Int(incoming[i]) - Int(leaving[i])
            }
        }
    }

    private static func premultiply(_ base: UnsafeMutablePointer<UInt8>, count: Int, channels: Int, alpha: Int) {
        for p in 0..<count {
            let pixel = base + p * channels
            let a = Int(pixel[alpha])
            guard a < 255 else { continue }
            for c in 0..<alpha { pixel[c] = UInt8((Int(pixel[c]) * a + 127) / 255) }
        }
    }

    private static func unpremultiply(_ base: UnsafeMutablePointer<UInt8>, count: Int, channels: Int, alpha: Int) {
        for p in 0..<count {
            let pixel = base + p * channels
            let a = Int(pixel[alpha])
            guard a < 255 else { continue }
            for c in 0..<alpha { pixel[c] = a == 0 ? 0 : UInt8(min((Int(pixel[c]) * 255 + a / 2) / a, 255)) }
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.Blur {
    /// A Gaussian blur of standard deviation `radius` pixels (three box passes; see ``ImageProcessors/Blur``).
    public static func blur(radius: Double) -> Self { ImageProcessors.Blur(radius: radius) }
}
