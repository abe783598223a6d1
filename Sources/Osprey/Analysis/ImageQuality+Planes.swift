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
    var values: [Float]

    /// Planes whose every value the maker writes before any is read: left uninitialised (zeroing them first cost a
    /// tenth of a score).
    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        let count = 3 * width * height
        values = [Float](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }

    var planeCount: Int { width * height }
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
        var half = Planes(width: (width + 1) / 2, height: (height + 1) / 2)
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
    /// about 0–1).
    func xyb() -> Planes {
        var xyb = Planes(width: width, height: height)
        let count = planes.planeCount
        planes.values.withUnsafeBufferPointer { linear in
            xyb.values.withUnsafeMutableBufferPointer { out in
                let (source, target) = (linear.baseAddress!, out.baseAddress!)
                osprey_quality_xyb(
                    source, source + count, source + 2 * count, count, target, target + count, target + 2 * count)
            }
        }
        return xyb
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
    /// when it is first needed; `body(y, blurred)` then gets row `y` of every input blurred, input `i` at
    /// `blurred + i * width`. Rows past the top and bottom mirror those inside (-1 is 0, `height` is `height - 1`).
    func run(
        fill: (_ row: Int, _ input: Int, _ target: UnsafeMutablePointer<Float>) -> Void,
        body: (_ y: Int, _ blurred: UnsafeMutablePointer<Float>) -> Void
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
                osprey_quality_weighted_sum(columns, kernel, UInt32(width), output + input * width)
            }
            body(y, output)
        }
    }
}
