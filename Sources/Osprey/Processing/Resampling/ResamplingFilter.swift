import FoundationEssentials
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The reconstruction filter a resize samples with.
///
/// Filters are applied separably (rows, then columns) in gamma space — on the stored sRGB values, as Pillow and
/// libvips do by default — with alpha premultiplied. When shrinking, a filter is stretched by the scale factor, so
/// every source pixel contributes (no aliasing), and its weights are renormalised where it hangs over an edge.
public enum ResamplingFilter: String, Sendable, Hashable, CaseIterable {
    /// Lanczos, 3 lobes: the sharpest; the default.
    case lanczos3
    /// Mitchell–Netravali (B = C = 1/3), 2 pixels of support: softer, with less ringing than Lanczos.
    case mitchell
    /// Triangle (linear interpolation), 1 pixel of support.
    case bilinear
    /// Box (area average when shrinking, nearest neighbour when enlarging), ½ pixel of support.
    case box

    /// How far from its centre the filter is non-zero, in source pixels at scale 1.
    var support: Double {
        switch self {
        case .lanczos3: 3
        case .mitchell: 2
        case .bilinear: 1
        case .box: 0.5
        }
    }

    /// The filter's value at `x` source pixels from its centre (scale 1).
    func weight(at x: Double) -> Double {
        switch self {
        case .box:
            return x > -0.5 && x <= 0.5 ? 1 : 0
        case .bilinear:
            return max(0, 1 - abs(x))
        case .mitchell:
            let (b, c) = (1.0 / 3, 1.0 / 3)
            let x = abs(x)
            if x < 1 {
                return ((12 - 9 * b - 6 * c) * x * x * x + (-18 + 12 * b + 6 * c) * x * x + (6 - 2 * b)) / 6
            }
            if x < 2 {
                return
                    ((-b - 6 * c) * x * x * x + (6 * b + 30 * c) * x * x + (-12 * b - 48 * c) * x
                    + (8 * b + 24 * c)) / 6
            }
            return 0
        case .lanczos3:
            guard x > -3, x < 3 else { return 0 }
            return Self.sinc(x) * Self.sinc(x / 3)
        }
    }

    private static func sinc(_ x: Double) -> Double {
        guard x != 0 else { return 1 }
        let px = Double.pi * x
        return sin(px) / px
    }
}

/// For each output pixel along one axis, which source pixels it reads and with what weights: computed once per
/// resize and axis, then used for every row (or column).
struct ResamplingWeights {
    /// The first source pixel of each output pixel.
    let starts: [Int]
    /// How many source pixels each output pixel reads (at most ``taps``).
    let counts: [Int]
    /// The most source pixels any output pixel reads: the stride of ``weights``.
    let taps: Int
    /// `taps` weights per output pixel, summing to 1, zero past its count.
    let weights: [Float]

    /// The weights for resampling the source span `[start, start + length)` (in pixels, fractional allowed) of an
    /// axis `sourceLength` pixels long onto `outputLength` pixels, reading only the pixels the span touches.
    init(filter: ResamplingFilter, sourceLength: Int, start: Double, length: Double, outputLength: Int) {
        let scale = length / Double(outputLength)
        let filterScale = max(scale, 1)
        let support = filter.support * filterScale
        let taps = max(Int((support * 2).rounded(.up)) + 1, 1)
        var starts = [Int](repeating: 0, count: outputLength)
        var counts = [Int](repeating: 0, count: outputLength)
        var weights = [Float](repeating: 0, count: outputLength * taps)
        var values = [Double](repeating: 0, count: taps)
        // The filter reads only pixels inside the span (a cover crop does not bleed in what it cuts off); at the
        // span's edges its weights are renormalised.
        let low = min(max(Int(start.rounded(.down)), 0), sourceLength - 1)
        let high = max(min(Int((start + length).rounded(.up)), sourceLength), low + 1)
        for x in 0..<outputLength {
            let center = start + (Double(x) + 0.5) * scale
            var first = max(Int((center - support + 0.5).rounded(.down)), low)
            let end = min(Int((center + support + 0.5).rounded(.down)), high)
            first = min(first, high - 1)
            let count = min(max(end - first, 1), taps)
            var total = 0.0
            for j in 0..<count {
                let value = filter.weight(at: (Double(first + j) - center + 0.5) / filterScale)
                values[j] = value
                total += value
            }
            if total == 0 {
                // The filter missed every pixel it could reach (a box narrower than a pixel): take the nearest one.
                first = min(max(Int(center.rounded(.down)), low), high - 1)
                weights[x * taps] = 1
                starts[x] = first
                counts[x] = 1
                continue
            }
            for j in 0..<count { weights[x * taps + j] = Float(values[j] / total) }
            starts[x] = first
            counts[x] = count
        }
        self.starts = starts
        self.counts = counts
        self.taps = taps
        self.weights = weights
    }

    /// The weights of one geometry, from a small table of those made lately: a proxy resizes the same source sizes
    /// to the same output sizes over and over, and making the weights calls the filter (a `sin` for Lanczos) for
    /// every tap of every output pixel (about 1 % of a cold 1920 × 1080 thumbnail's CPU). At most 64 geometries are
    /// kept; the table starts over when full.
    static func cached(
        filter: ResamplingFilter, sourceLength: Int, start: Double, length: Double, outputLength: Int
    ) -> ResamplingWeights {
        let key = Geometry(
            filter: filter, sourceLength: sourceLength, start: start.bitPattern, length: length.bitPattern,
            outputLength: outputLength)
        if let found = recent.withLock({ $0[key] }) { return found }
        let made = ResamplingWeights(
            filter: filter, sourceLength: sourceLength, start: start, length: length, outputLength: outputLength)
        recent.withLock { table in
            if table.count >= 64 { table.removeAll(keepingCapacity: true) }
            table[key] = made
        }
        return made
    }

    /// What weights depend on (the span by its bits: the same doubles, the same weights).
    private struct Geometry: Hashable {
        let filter: ResamplingFilter
        let sourceLength: Int
        let start: UInt64
        let length: UInt64
        let outputLength: Int
    }

    private static let recent = Mutex<[Geometry: ResamplingWeights]>([:])

    /// The source pixels any output pixel reads: `[first, end)`.
    var sourceRange: Range<Int> {
        guard let first = starts.first else { return 0..<0 }
        let end = zip(starts, counts).map { $0 + $1 }.max() ?? first
        return (starts.min() ?? first)..<end
    }
}
