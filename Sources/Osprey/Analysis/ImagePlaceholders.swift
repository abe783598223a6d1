public import OspreyCodecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a page paints before an image arrives, and what finds an image's duplicates: BlurHash and ThumbHash
/// placeholders, the average and dominant colours, and a perceptual hash, computed from an image's pixels (a small
/// decode is enough: each works on at most 100 × 100 pixels but the colours and the hash, which take what they are
/// given).
///
/// ```swift
/// let placeholders = try ImagePlaceholders(image)       // the image's first frame, upright
/// try placeholders.blurHash()                           // "LEHV6nWB2yk8pyo0adR*.7kCMdnj" (4 × 3 components)
/// try placeholders.thumbHash()                          // "1QcSHQRnh493V4dIh4eXh1h4kJUI" (base64)
/// placeholders.averageColor                             // "#7a8c6e"
/// placeholders.dominantColors(count: 4)                 // [("#2f4a1c", 0.41), …]
/// placeholders.perceptualHash                           // "c3d1c3c1e1f0f8f8"
/// ```
///
/// Each matches its reference when fed the same pixels: BlurHash PyPI `blurhash`'s encoder (Wolt's algorithm), ThumbHash
/// PyPI `thumbhash-python`'s, the perceptual hash `imagehash.phash`'s (its 32 × 32 Lanczos reduction and DCT), the
/// colours a k-means of the pixels.
public struct ImagePlaceholders: Sendable {
    /// The pixels, upright, RGBA.
    public let pixels: PixelBuffer

    /// Reads `image`'s first frame, upright.
    ///
    /// - Throws: `CodecError` when its pixels cannot be converted.
    public init(_ image: Image) throws {
        let upright = try image.mappingFrames { $0 }
        pixels = try upright.frames[0].pixels.converted(to: .rgba8)
    }

    /// Wraps RGBA pixels as they are.
    public init(pixels: PixelBuffer) throws(CodecError) {
        self.pixels = try pixels.converted(to: .rgba8)
    }

    /// The pixels as rows of (red, green, blue, alpha).
    func values(_ body: (Int, Int, UInt8, UInt8, UInt8, UInt8) -> Void) {
        pixels.withUnsafeBytes { bytes in
            for y in 0..<pixels.height {
                var offset = y * pixels.bytesPerRow
                for x in 0..<pixels.width {
                    body(x, y, bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3])
                    offset += 4
                }
            }
        }
    }

    // MARK: Colours

    /// The mean colour, each pixel weighted by its alpha, as `#rrggbb` (`#000000` for a transparent image).
    public var averageColor: String {
        var (red, green, blue, weight) = (0.0, 0.0, 0.0, 0.0)
        values { _, _, r, g, b, a in
            let alpha = Double(a)
            red += Double(r) * alpha
            green += Double(g) * alpha
            blue += Double(b) * alpha
            weight += alpha
        }
        guard weight > 0 else { return "#000000" }
        return Self.hex(red / weight, green / weight, blue / weight)
    }

    /// The `count` colours that best stand for the image (k-means of its opaque pixels in RGB, seeded by k-means++
    /// from a fixed seed, so the same pixels always give the same palette), each with the share of the pixels it
    /// stands for, most common first.
    public func dominantColors(count: Int = 5) -> [(color: String, weight: Double)] {
        var samples: [(Double, Double, Double)] = []
        values { _, _, r, g, b, a in
            if a >= 128 { samples.append((Double(r), Double(g), Double(b))) }
        }
        return KMeans.clusters(samples, count: max(1, min(count, 16))).map { (Self.hex($0.0, $0.1, $0.2), $0.3) }
    }

    static func hex(_ red: Double, _ green: Double, _ blue: Double) -> String {
        "#"
            + [red, green, blue].map { value -> String in
                let byte = UInt8(min(max(value.rounded(), 0), 255))
                return (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }.joined()
    }
}

/// Lloyd's k-means, the best (least squared error) of a few runs seeded by k-means++ from a fixed seed: deterministic
/// for the same samples, and rarely caught in a poor local minimum.
enum KMeans {
    typealias Point = (Double, Double, Double)

    /// How many seeded runs are tried.
    static let runs = 10

    /// The clusters of `samples` (red, green, blue) as (red, green, blue, share), largest first.
    static func clusters(_ samples: [Point], count: Int) -> [(Double, Double, Double, Double)] {
        guard !samples.isEmpty else { return [] }
        // At most 2,048 samples, evenly spaced: the palette of a large image needs no more.
        let step = max(samples.count / 2048, 1)
        let points = Swift.stride(from: 0, to: samples.count, by: step).map { samples[$0] }
        var random = SplitMix(seed: 0x0579_3EED)
        var best: (centers: [Point], assignment: [Int], error: Double)?
        for _ in 0..<runs {
            let run = lloyd(points, centers: seeds(points, count: count, random: &random))
            if best == nil || run.error < best!.error { best = run }
        }
        guard let best else { return [] }
        var sizes = [Double](repeating: 0, count: best.centers.count)
        for cluster in best.assignment { sizes[cluster] += 1 }
        return best.centers.indices.filter { sizes[$0] > 0 }
            .map { (best.centers[$0].0, best.centers[$0].1, best.centers[$0].2, sizes[$0] / Double(points.count)) }
            .sorted { $0.3 > $1.3 }
    }

    static func distance(_ a: Point, _ b: Point) -> Double {
        let (dr, dg, db) = (a.0 - b.0, a.1 - b.1, a.2 - b.2)
        return dr * dr + dg * dg + db * db
    }

    /// Greedy k-means++ (as scikit-learn seeds): each next centre the best, by the squared error it leaves, of a few
    /// candidates drawn with a probability growing with their squared distance to the nearest centre.
    static func seeds(_ points: [Point], count: Int, random: inout SplitMix) -> [Point] {
        var centers = [points[Int(random.next() % UInt64(points.count))]]
        var nearest = points.map { distance($0, centers[0]) }
        let trials = 2 + Int(log(Double(count)))
        while centers.count < min(count, points.count) {
            let total = nearest.reduce(0, +)
            guard total > 0 else { break }
            var best: (index: Int, nearest: [Double], error: Double)?
            for _ in 0..<trials {
                var target = Double(random.next() >> 11) / Double(1 << 53) * total
                var chosen = points.count - 1
                nearest.withUnsafeBufferPointer { nearest in
                    for index in 0..<nearest.count {
                        target -= nearest[index]
                        if target <= 0 {
                            chosen = index
                            break
                        }
                    }
                }
                var candidate = nearest
                var error = 0.0
                points.withUnsafeBufferPointer { points in
                    candidate.withUnsafeMutableBufferPointer { candidate in
                        let center = points[chosen]
                        for index in 0..<points.count {
                            candidate[index] = min(candidate[index], distance(points[index], center))
                            error += candidate[index]
                        }
                    }
                }
                if best == nil || error < best!.error { best = (chosen, candidate, error) }
            }
            guard let best else { break }
            centers.append(points[best.index])
            nearest = best.nearest
        }
        return centers
    }

    /// Lloyd's iterations from `centers` until no point changes cluster (at most 50). Plain index loops over
    /// unsafe buffers: this runs ten times per palette, inside a request, and in debug builds too.
    static func lloyd(_ points: [Point], centers start: [Point]) -> (centers: [Point], assignment: [Int], error: Double)
    {
        var centers = start
        var assignment = [Int](repeating: -1, count: points.count)
        let k = centers.count
        var sums = [Double](repeating: 0, count: k * 4)
        points.withUnsafeBufferPointer { points in
            assignment.withUnsafeMutableBufferPointer { assignment in
                for _ in 0..<50 {
                    var changed = false
                    centers.withUnsafeBufferPointer { centers in
                        for index in 0..<points.count {
                            let point = points[index]
                            var (closest, least) = (0, Double.infinity)
                            for cluster in 0..<k {
                                let d = distance(point, centers[cluster])
                                if d < least { (closest, least) = (cluster, d) }
                            }
                            if closest != assignment[index] { (assignment[index], changed) = (closest, true) }
                        }
                    }
                    if !changed { break }
                    sums.withUnsafeMutableBufferPointer { sums in
                        for i in 0..<sums.count { sums[i] = 0 }
                        for index in 0..<points.count {
                            let (point, base) = (points[index], assignment[index] * 4)
                            sums[base] += point.0
                            sums[base + 1] += point.1
                            sums[base + 2] += point.2
                            sums[base + 3] += 1
                        }
                    }
                    for cluster in 0..<k where sums[cluster * 4 + 3] > 0 {
                        let n = sums[cluster * 4 + 3]
                        centers[cluster] = (sums[cluster * 4] / n, sums[cluster * 4 + 1] / n, sums[cluster * 4 + 2] / n)
                    }
                }
            }
        }
        var error = 0.0
        for index in 0..<points.count { error += distance(points[index], centers[assignment[index]]) }
        return (centers, assignment, error)
    }

    /// SplitMix64: a small deterministic generator.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
