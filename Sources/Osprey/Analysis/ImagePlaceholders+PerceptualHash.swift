import OspreyCodecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ImagePlaceholders {
    /// A 64-bit perceptual hash as 16 hexadecimal digits, computed as `imagehash.phash` computes it: the luma
    /// (Pillow's `L`), reduced to 32 × 32 as Pillow's Lanczos resize reduces it (integer for integer), a
    /// two-dimensional DCT-II, and its 8 × 8 lowest frequencies each compared with their median, the bits row by row.
    /// Near-duplicates differ in few bits (the Hamming distance); the cost grows with the pixels given.
    public var perceptualHash: String {
        var luma = [UInt8](repeating: 0, count: pixels.width * pixels.height)
        let width = pixels.width
        values { x, y, r, g, b, _ in
            // Pillow's RGB to L: ITU-R 601-2 in 16-bit fixed point.
            let weighted: Int = Int(r) * 19595 + Int(g) * 38470 + Int(b) * 7471
            luma[y * width + x] = UInt8((weighted + 0x8000) >> 16)
        }
        let size = 32
        let small = PillowLanczos.resize(luma, width: pixels.width, height: pixels.height, to: size, size)
        // scipy's unnormalised DCT-II, along the columns and then the rows: 2 Σ x[n] cos(π k (2n + 1) / 2N), of which
        // only the 8 lowest frequencies are needed.
        let cosines = (0..<8).map { k in
            (0..<size).map { n in cos(Double.pi * Double(k) * Double(2 * n + 1) / Double(2 * size)) }
        }
        var columns = [Double](repeating: 0, count: 8 * size)
        for k in 0..<8 {
            for x in 0..<size {
                var sum = 0.0
                for n in 0..<size { sum += Double(small[n * size + x]) * cosines[k][n] }
                columns[k * size + x] = 2 * sum
            }
        }
        var low = [Double](repeating: 0, count: 64)
        for k in 0..<8 {
            for l in 0..<8 {
                var sum = 0.0
                for n in 0..<size { sum += columns[k * size + n] * cosines[l][n] }
                low[k * 8 + l] = 2 * sum
            }
        }
        // The cosines of the frequencies an even image lacks sum to rounding noise, not to zero: noise a millionth of
        // the mean is zero, as scipy's FFT computes it, so that flat and striped images hash as they do there.
        let noise = abs(low[0]) * 1e-9
        low = low.map { abs($0) <= noise ? 0 : $0 }
        let sorted = low.sorted()
        let median = (sorted[31] + sorted[32]) / 2
        var hash: UInt64 = 0
        for value in low { hash = hash << 1 | (value > median ? 1 : 0) }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// Pillow's `Image.resize(…, LANCZOS)` of an 8-bit grey image, integer for integer: its coefficients (a Lanczos-3
/// window widened by the reduction factor, each row normalised, then in 22-bit fixed point), the horizontal pass into
/// 8-bit rows first (only those the vertical pass reads), then the vertical one.
enum PillowLanczos {
    static let precisionBits = 32 - 8 - 2

    static func resize(_ pixels: [UInt8], width: Int, height: Int, to outWidth: Int, _ outHeight: Int) -> [UInt8] {
        guard (width, height) != (outWidth, outHeight) else { return pixels }
        let horizontal = coefficients(inSize: width, outSize: outWidth)
        var vertical = coefficients(inSize: height, outSize: outHeight)
        var rows = pixels
        var rowWidth = width
        var firstRow = 0
        if outWidth != width {
            firstRow = vertical.bounds[0].start
            let lastRow = vertical.bounds[outHeight - 1].start + vertical.bounds[outHeight - 1].count
            for index in vertical.bounds.indices { vertical.bounds[index].start -= firstRow }
            var temporary = [UInt8](repeating: 0, count: outWidth * (lastRow - firstRow))
            for y in 0..<(lastRow - firstRow) {
                let source = (y + firstRow) * width
                for x in 0..<outWidth {
                    let (start, count) = horizontal.bounds[x]
                    var sum = 1 << (precisionBits - 1)
                    for tap in 0..<count {
                        sum += Int(pixels[source + start + tap]) * horizontal.weights[x * horizontal.taps + tap]
                    }
                    temporary[y * outWidth + x] = clip8(sum)
                }
            }
            rows = temporary
            rowWidth = outWidth
        }
        guard outHeight != height || firstRow != 0 else { return rows }
        var result = [UInt8](repeating: 0, count: rowWidth * outHeight)
        for y in 0..<outHeight {
            let (start, count) = vertical.bounds[y]
            for x in 0..<rowWidth {
                var sum = 1 << (precisionBits - 1)
                for tap in 0..<count {
                    sum += Int(rows[(start + tap) * rowWidth + x]) * vertical.weights[y * vertical.taps + tap]
                }
                result[y * rowWidth + x] = clip8(sum)
            }
        }
        return result
    }

    static func clip8(_ value: Int) -> UInt8 {
        if value >= (1 << precisionBits) << 8 { return 255 }
        if value <= 0 { return 0 }
        return UInt8(value >> precisionBits)
    }

    static func lanczos(_ x: Double) -> Double {
        func sinc(_ x: Double) -> Double {
            if x == 0 { return 1 }
            let angle = x * Double.pi
            return sin(angle) / angle
        }
        return -3 <= x && x < 3 ? sinc(x) * sinc(x / 3) : 0
    }

    /// Each output pixel's first source pixel and count, and the weights (`taps` per output pixel).
    static func coefficients(
        inSize: Int, outSize: Int
    ) -> (bounds: [(start: Int, count: Int)], weights: [Int], taps: Int) {
        let scale = Double(Float(inSize)) / Double(outSize)
        let filterScale = max(scale, 1)
        let support = 3 * filterScale
        let taps = Int(support.rounded(.up)) * 2 + 1
        var bounds: [(start: Int, count: Int)] = []
        var weights = [Int](repeating: 0, count: outSize * taps)
        for output in 0..<outSize {
            let center = (Double(output) + 0.5) * scale
            let inverse = 1 / filterScale
            let first = max(Int(center - support + 0.5), 0)
            let count = min(Int(center + support + 0.5), inSize) - first
            var kernel: [Double] = []
            for tap in 0..<max(count, 0) {
                let position = Double(tap + first) - center + 0.5
                kernel.append(lanczos(position * inverse))
            }
            let total = kernel.reduce(0, +)
            if total != 0 { kernel = kernel.map { $0 / total } }
            for (tap, weight) in kernel.enumerated() {
                let scaled = weight * Double(1 << precisionBits)
                weights[output * taps + tap] = weight < 0 ? Int(-0.5 + scaled) : Int(0.5 + scaled)
            }
            bounds.append((first, max(count, 0)))
        }
        return (bounds, weights, taps)
    }
}
