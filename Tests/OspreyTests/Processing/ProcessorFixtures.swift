import Foundation
import OspreyCodecs

/// Pixel buffers the processor tests build and read.
enum ProcessorFixtures {
    /// A buffer whose pixel (x, y) is `pixel(x, y)`, as many bytes as the format has channels.
    static func buffer(
        width: Int, height: Int, format: PixelFormat = .rgba8, _ pixel: (Int, Int) -> [UInt8]
    ) throws -> PixelBuffer {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(width * height * format.bytesPerPixel)
        for y in 0..<height {
            for x in 0..<width { bytes += pixel(x, y) }
        }
        return try PixelBuffer(width: width, height: height, format: format, bytes: bytes)
    }

    /// A photo-like RGB picture: smooth gradients, a sharp-edged disc and fine stripes, deterministic.
    static func picture(width: Int, height: Int) throws -> PixelBuffer {
        try buffer(width: width, height: height, format: .rgb8) { x, y in
            let (u, v) = (Double(x) / Double(width), Double(y) / Double(height))
            let disc = (u - 0.6) * (u - 0.6) + (v - 0.4) * (v - 0.4) < 0.04
            let stripes = (x / 3) % 2 == 0 && v > 0.75
            let r = disc ? 230 : Int(255 * u)
            let g = stripes ? 250 : Int(200 * v + 30 * sin(u * 12))
            let b = disc ? 40 : Int(120 + 100 * sin(u * 5 + v * 3))
            return [r, g, b].map { UInt8(clamping: $0) }
        }
    }

    /// The pixel at (x, y) as bytes.
    static func pixel(_ buffer: PixelBuffer, _ x: Int, _ y: Int) -> [UInt8] {
        let size = buffer.format.bytesPerPixel
        return Array(buffer.row(y)[x * size..<(x + 1) * size])
    }

    /// Peak signal-to-noise ratio of `a` against `b` (same size and format), over all channels, in dB.
    static func psnr(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
        precondition(a.width == b.width && a.height == b.height && a.format == b.format)
        var sum = 0.0
        var count = 0
        for y in 0..<a.height {
            for (p, q) in zip(a.row(y), b.row(y)) {
                let d = Double(p) - Double(q)
                sum += d * d
                count += 1
            }
        }
        let mse = sum / Double(count)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }
}

/// An exact, unoptimised Lanczos-3 resize written independently of the library's: every output pixel is the sum,
/// in `Double`, of the source pixels under the two-dimensional kernel scaled to the reduction, normalised, the
/// kernel evaluated directly (no tables, no intermediate rounding). Opaque RGB only.
enum ReferenceResize {
    static func lanczos3(_ source: PixelBuffer, width: Int, height: Int) throws -> PixelBuffer {
        func kernel(_ x: Double) -> Double {
            guard abs(x) < 3 else { return 0 }
            guard x != 0 else { return 1 }
            return 3 * sin(Double.pi * x) * sin(Double.pi * x / 3) / (Double.pi * Double.pi * x * x)
        }
        // Per axis: the (index, weight) pairs of each output coordinate.
        func taps(_ inSize: Int, _ outSize: Int) -> [[(Int, Double)]] {
            let scale = Double(inSize) / Double(outSize)
            let stretch = max(scale, 1)
            return (0..<outSize).map { o in
                let center = (Double(o) + 0.5) * scale
                let low = Int((center - 3 * stretch).rounded(.down))
                let high = Int((center + 3 * stretch).rounded(.up))
                let pairs = (low...high).compactMap { i -> (Int, Double)? in
                    guard i >= 0, i < inSize else { return nil }
                    let w = kernel((Double(i) + 0.5 - center) / stretch)
                    return w == 0 ? nil : (i, w)
                }
                let total = pairs.reduce(0) { $0 + $1.1 }
                return pairs.map { ($0.0, $0.1 / total) }
            }
        }
        let (xs, ys) = (taps(source.width, width), taps(source.height, height))
        let rows = (0..<source.height).map { source.row($0) }
        return try ProcessorFixtures.buffer(width: width, height: height, format: .rgb8) { x, y in
            (0..<3).map { c in
                var sum = 0.0
                for (j, wy) in ys[y] {
                    for (i, wx) in xs[x] { sum += wx * wy * Double(rows[j][i * 3 + c]) }
                }
                return UInt8(min(max(sum.rounded(), 0), 255))
            }
        }
    }
}
