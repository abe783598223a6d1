import COspreyCodecShims
import OspreyCodecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Three planes of `Float`, one after the other, each `width` × `height` row by row.
struct Planes: Sendable {
    let width: Int
    let height: Int
    let values: PlaneValues

    /// Planes whose every value the maker writes before any is read: left uninitialised (zeroing them first cost a
    /// tenth of a score).
    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        values = PlaneValues(count: 3 * width * height)
    }

    var planeCount: Int { width * height }
}

/// The floats of `Planes`, from the pixel allocator, which recycles large buffers: a score's planes are tens of
/// megabytes, and faulting in fresh pages for each one was half the time of a score (a q=auto search makes several).
/// `@unchecked Sendable`: it owns a C buffer, written only while it is being made (by the one task making it) and
/// read-only once shared.
final class PlaneValues: @unchecked Sendable {
    private let pointer: UnsafeMutablePointer<Float>
    let count: Int
    /// Whether the pixel allocator made the buffer (else Swift's allocator, when it had no memory left).
    private let fromPixelAllocator: Bool

    init(count: Int) {
        self.count = count
        if let raw = osprey_pixels_allocate_uninitialized(Self.byteCount(count)) {
            pointer = raw.bindMemory(to: Float.self, capacity: max(count, 1))
            fromPixelAllocator = true
        } else {
            // Memory is exhausted: Swift's allocator stops the process, as an array's allocation would.
            pointer = .allocate(capacity: max(count, 1))
            fromPixelAllocator = false
        }
    }

    deinit {
        if fromPixelAllocator {
            osprey_pixels_free(pointer, Self.byteCount(count))
        } else {
            pointer.deallocate()
        }
    }

    private static func byteCount(_ count: Int) -> Int { max(count, 1) * MemoryLayout<Float>.stride }

    func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Float>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: pointer, count: count))
    }

    func withUnsafeMutableBufferPointer<Result>(
        _ body: (UnsafeMutableBufferPointer<Float>) throws -> Result
    ) rethrows -> Result {
        try body(UnsafeMutableBufferPointer(start: pointer, count: count))
    }
}

/// An image in linear sRGB (alpha blended over a grey background in the encoded values first, as libjxl does).
struct LinearPlanes {
    var planes: Planes
    var width: Int { planes.width }
    var height: Int { planes.height }

    /// The sRGB decoding of every 8-bit value.
    private static let decoded: [Float] = (0..<256).map { value in
        let encoded = Double(value) / 255
        return Float(encoded <= 0.04045 ? encoded / 12.92 : pow((encoded + 0.055) / 1.055, 2.4))
    }

    init(_ pixels: PixelBuffer, background: Float) throws {
        let source = pixels.format == .rgba8 || pixels.format == .rgb8 ? pixels : try pixels.converted(to: .rgba8)
        planes = Planes(width: source.width, height: source.height)
        let count = planes.planeCount
        Self.decoded.withUnsafeBufferPointer { table in
            source.withUnsafeBytes { bytes in
                planes.values.withUnsafeMutableBufferPointer { values in
                    let base = values.baseAddress!
                    osprey_quality_linear_planes(
                        bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), source.bytesPerRow,
                        UInt32(source.width), UInt32(source.height), UInt32(source.format.bytesPerPixel),
                        source.format.hasAlpha ? 1 : 0, background, table.baseAddress!, base, base + count,
                        base + 2 * count)
                }
            }
        }
    }

    private init(planes: Planes) {
        self.planes = planes
    }

    /// Half the size (rounded up), each pixel the mean of a 2 × 2 block, the last row and column repeated where the
    /// size is odd.
    func halved() -> LinearPlanes {
        let half = Planes(width: (width + 1) / 2, height: (height + 1) / 2)
        let (count, halfCount) = (planes.planeCount, half.planeCount)
        planes.values.withUnsafeBufferPointer { source in
            half.values.withUnsafeMutableBufferPointer { target in
                for plane in 0..<3 {
                    osprey_quality_halve(
                        source.baseAddress! + plane * count, UInt32(width), UInt32(height),
                        target.baseAddress! + plane * halfCount)
                }
            }
        }
        return LinearPlanes(planes: half)
    }

    /// The XYB planes, rescaled as SSIMULACRA 2 rescales them (X × 14 + 0.42, Y + 0.01, B − Y + 0.55: all within
    /// about 0–1), written over the linear ones (a score's scales would otherwise allocate twice the memory).
    consuming func convertedToXYB() -> Planes {
        let count = planes.planeCount
        planes.values.withUnsafeMutableBufferPointer { values in
            let base = values.baseAddress!
            // In place: each value is read before it is written.
            osprey_quality_xyb(base, base + count, base + 2 * count, count, base, base + count, base + 2 * count)
        }
        return planes
    }

    /// Calls `body` with each scale's XYB planes in turn, from `linear`'s size down, each scale half the one before,
    /// while both sides are at least 8 pixels and up to SSIMULACRA 2's six.
    static func forEachScale(of linear: consuming LinearPlanes, _ body: (Int, Planes) -> Void) {
        var current = consume linear
        for scale in 0..<ImageQuality.scaleCount {
            let next = scale + 1 < ImageQuality.scaleCount ? current.halved() : nil
            body(scale, current.convertedToXYB())
            guard let next, next.width >= 8, next.height >= 8 else { return }
            current = next
        }
    }
}

/// The cube root of `value`, as the XYB conversion computes it: an estimate from the exponent bits, then two Halley
/// steps, to single precision.
func cubeRoot(_ value: Float) -> Float {
    osprey_quality_cube_root(value)
}

/// The Gaussian blur the metric's means and variances come from: σ 1.5, 11 taps, separable. What lies beyond the left
/// and right edges is zero and the top and bottom rows are mirrored, as the PyPI `ssimulacra2` package blurs (it pads
/// its image, which it holds transposed, with zeros along the rows): the reference Osprey's scores are tested
/// against. libjxl's tool blurs recursively with zeros on all four sides, which near the edges of the coarse scales
/// weighs less of the picture: on a 640 × 360 photo, padding with zeros all round here scores 0.2–0.4 higher at q95
/// (JPEG, WebP), 0.9–1.5 at q75 and 4–5 at q10.
enum GaussianBlur {
    static let radius = 5
    static let kernel: [Float] = {
        let weights = (-radius...radius).map { exp(-Double($0 * $0) / (2 * 1.5 * 1.5)) }
        let total = weights.reduce(0, +)
        return weights.map { Float($0 / total) }
    }()
}

/// Several planes blurred at once, a row at a time: each source row is blurred across once, into a ring of the eleven
/// rows the vertical pass reads, so that nothing the size of the image is allocated.
struct StreamingBlur: ~Copyable {
    let width: Int
    let height: Int
    let inputs: Int
    private static let ringRows = 2 * GaussianBlur.radius + 1
    /// `inputs` rings of `ringRows` rows: source row `r` of input `i` in slot `r % ringRows`.
    private let ring: UnsafeMutablePointer<Float>
    /// One source row with `radius` zeros on each side.
    private let padded: UnsafeMutablePointer<Float>
    /// One blurred row of each input, one after the other.
    private let output: UnsafeMutablePointer<Float>
    private let kernel: UnsafeMutablePointer<Float>
    /// The eleven rows (or shifted row starts) a weighted sum reads.
    private let taps: UnsafeMutablePointer<UnsafePointer<Float>?>

    init(width: Int, height: Int, inputs: Int) {
        (self.width, self.height, self.inputs) = (width, height, inputs)
        ring = .allocate(capacity: inputs * Self.ringRows * width)
        padded = .allocate(capacity: width + 2 * GaussianBlur.radius)
        padded.initialize(repeating: 0, count: width + 2 * GaussianBlur.radius)
        output = .allocate(capacity: inputs * width)
        kernel = .allocate(capacity: GaussianBlur.kernel.count)
        kernel.initialize(from: GaussianBlur.kernel, count: GaussianBlur.kernel.count)
        taps = .allocate(capacity: Self.ringRows)
        // Across a row, output x reads padded[x ... x + 10]: the same sum as down a column, over shifted starts.
        for k in 0..<Self.ringRows { taps[k] = UnsafePointer(padded + k) }
    }

    deinit {
        ring.deallocate()
        padded.deallocate()
        output.deallocate()
        kernel.deallocate()
        taps.deallocate()
    }

    /// Walks the rows in order: `fill(row, input, target)` writes source row `row` of input `input` (`width` values)
    /// when it is first needed; row `y` of input `i` blurred is written where `destination(y, i)` says (by default
    /// `blurred + i * width`, a buffer of the blur's own), then `body(y, blurred)` is called. Rows past the top and
    /// bottom mirror those inside (-1 is 0, `height` is `height - 1`).
    func run(
        fill: (_ row: Int, _ input: Int, _ target: UnsafeMutablePointer<Float>) -> Void,
        destination: ((_ y: Int, _ input: Int) -> UnsafeMutablePointer<Float>)? = nil,
        body: (_ y: Int, _ blurred: UnsafeMutablePointer<Float>) -> Void = { _, _ in }
    ) {
        let radius = GaussianBlur.radius
        let columns = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: Self.ringRows)
        defer { columns.deallocate() }
        var next = 0
        for y in 0..<height {
            while next <= min(height - 1, y + radius) {
                let slot = next % Self.ringRows
                for input in 0..<inputs {
                    fill(next, input, padded + radius)
                    osprey_quality_weighted_sum(
                        taps, kernel, UInt32(width), ring + (input * Self.ringRows + slot) * width)
                }
                next += 1
            }
            for input in 0..<inputs {
                for k in -radius...radius {
                    var row = y + k
                    if row < 0 { row = -row - 1 }
                    if row >= height { row = 2 * height - row - 1 }
                    columns[k + radius] = UnsafePointer(ring + (input * Self.ringRows + row % Self.ringRows) * width)
                }
                osprey_quality_weighted_sum(
                    columns, kernel, UInt32(width), destination?(y, input) ?? output + input * width)
            }
            body(y, output)
        }
    }
}
