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
    private static let decoded: [Float] = (0..<256).map { linear(Float($0) / 255) }

    private static func linear(_ encoded: Float) -> Float {
        encoded <= 0.04045 ? encoded / 12.92 : Float(pow(Double((encoded + 0.055) / 1.055), 2.4))
    }

    init(_ pixels: PixelBuffer, background: Float) throws {
        let source = pixels.format == .rgba8 || pixels.format == .rgb8 ? pixels : try pixels.converted(to: .rgba8)
        planes = Planes(width: source.width, height: source.height)
        let count = planes.planeCount
        let (width, height) = (source.width, source.height)
        let stride = source.bytesPerRow
        let channels = source.format.bytesPerPixel
        let hasAlpha = source.format.hasAlpha
        Self.decoded.withUnsafeBufferPointer { table in
            source.withUnsafeBytes { bytes in
                planes.values.withUnsafeMutableBufferPointer { values in
                    let (red, green, blue) = (
                        values.baseAddress!, values.baseAddress! + count, values.baseAddress! + 2 * count
                    )
                    for y in 0..<height {
                        var offset = y * stride
                        var index = y * width
                        for _ in 0..<width {
                            let (r, g, b) = (bytes[offset], bytes[offset + 1], bytes[offset + 2])
                            if hasAlpha, bytes[offset + 3] != 255 {
                                let alpha = Float(bytes[offset + 3]) / 255
                                func blended(_ value: UInt8) -> Float {
                                    Self.linear(alpha * Float(value) / 255 + (1 - alpha) * background)
                                }
                                (red[index], green[index], blue[index]) = (blended(r), blended(g), blended(b))
                            } else {
                                (red[index], green[index], blue[index]) = (table[Int(r)], table[Int(g)], table[Int(b)])
                            }
                            offset += channels
                            index += 1
                        }
                    }
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
        let (width, height) = (self.width, self.height)
        var half = Planes(width: (width + 1) / 2, height: (height + 1) / 2)
        let (halfWidth, halfHeight, count, halfCount) = (half.width, half.height, planes.planeCount, half.planeCount)
        planes.values.withUnsafeBufferPointer { source in
            half.values.withUnsafeMutableBufferPointer { target in
                for plane in 0..<3 {
                    let input = source.baseAddress! + plane * count
                    let output = target.baseAddress! + plane * halfCount
                    for y in 0..<halfHeight {
                        let top = input + 2 * y * width
                        let bottom = input + min(2 * y + 1, height - 1) * width
                        for x in 0..<halfWidth {
                            let (left, right) = (2 * x, min(2 * x + 1, width - 1))
                            output[y * halfWidth + x] = (top[left] + top[right] + bottom[left] + bottom[right]) * 0.25
                        }
                    }
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
        // libjxl's opsin absorbance matrix and bias.
        let (m00, m01, m02): (Float, Float, Float) = (0.30, 1 - 0.078 - 0.30, 0.078)
        let (m10, m11, m12): (Float, Float, Float) = (0.23, 1 - 0.078 - 0.23, 0.078)
        let (m20, m21): (Float, Float) = (0.24342268924547819, 0.20476744424496821)
        let m22 = 1 - m20 - m21
        let bias: Float = 0.0037930732552754493
        let rootOfBias = cubeRoot(bias)
        planes.values.withUnsafeBufferPointer { linear in
            xyb.values.withUnsafeMutableBufferPointer { out in
                let (r, g, b) = (linear.baseAddress!, linear.baseAddress! + count, linear.baseAddress! + 2 * count)
                let (x, y, z) = (out.baseAddress!, out.baseAddress! + count, out.baseAddress! + 2 * count)
                typealias Lanes = SIMD8<Float>
                @inline(__always) func load(_ plane: UnsafePointer<Float>, _ i: Int) -> Lanes {
                    UnsafeRawPointer(plane + i).loadUnaligned(as: Lanes.self)
                }
                @inline(__always) func store(_ value: Lanes, _ plane: UnsafeMutablePointer<Float>, _ i: Int) {
                    UnsafeMutableRawPointer(plane + i).storeBytes(of: value, as: Lanes.self)
                }
                var i = 0
                // Eight pixels at a time, then one by one (the same arithmetic).
                while i + Lanes.scalarCount <= count {
                    let (red, green, blue) = (load(r, i), load(g, i), load(b, i))
                    let mixed0 = cubeRoot(m00 * red + m01 * green + m02 * blue + bias) - rootOfBias
                    let mixed1 = cubeRoot(m10 * red + m11 * green + m12 * blue + bias) - rootOfBias
                    let mixed2 = cubeRoot(m20 * red + m21 * green + m22 * blue + bias) - rootOfBias
                    let luma = 0.5 * (mixed0 + mixed1)
                    store(0.5 * (mixed0 - mixed1) * 14 + 0.42, x, i)
                    store(luma + 0.01, y, i)
                    store((mixed2 - luma) + 0.55, z, i)
                    i += Lanes.scalarCount
                }
                while i < count {
                    let mixed0 = cubeRoot(max(m00 * r[i] + m01 * g[i] + m02 * b[i] + bias, 0)) - rootOfBias
                    let mixed1 = cubeRoot(max(m10 * r[i] + m11 * g[i] + m12 * b[i] + bias, 0)) - rootOfBias
                    let mixed2 = cubeRoot(max(m20 * r[i] + m21 * g[i] + m22 * b[i] + bias, 0)) - rootOfBias
                    let luma = 0.5 * (mixed0 + mixed1)
                    x[i] = 0.5 * (mixed0 - mixed1) * 14 + 0.42
                    y[i] = luma + 0.01
                    z[i] = (mixed2 - luma) + 0.55
                    i += 1
                }
            }
        }
        return xyb
    }
}

/// The cube roots of eight values, each at least libjxl's bias (linear light is never negative), as
/// `cubeRoot(_:)` computes one.
@inline(__always)
func cubeRoot(_ values: SIMD8<Float>) -> SIMD8<Float> {
    let bits = unsafeBitCast(values, to: SIMD8<UInt32>.self) / 3 &+ 709_921_077
    var root = unsafeBitCast(bits, to: SIMD8<Float>.self)
    for _ in 0..<2 {
        let cube = root * root * root
        root *= (cube + 2 * values) / (2 * cube + values)
    }
    return root
}

/// The cube root of `value` (≥ 0), to single precision: an estimate from the exponent bits, then two Halley steps
/// (each triples the correct digits). Several times faster than `cbrtf`, which the XYB conversion calls three times a
/// pixel at every scale.
@inline(__always)
func cubeRoot(_ value: Float) -> Float {
    guard value > 0 else { return 0 }
    var root = Float(bitPattern: value.bitPattern / 3 &+ 709_921_077)
    for _ in 0..<2 {
        let cube = root * root * root
        root *= (cube + 2 * value) / (2 * cube + value)
    }
    return root
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

    /// Blurs the row in `padded[radius ..< radius + width]` into `output`; the `radius` slots on each side are zero.
    @inline(__always)
    static func blurRow(
        _ padded: UnsafeMutablePointer<Float>, width: Int, kernel: UnsafePointer<Float>,
        into output: UnsafeMutablePointer<Float>
    ) {
        // Output x reads padded[x ... x + 10]: the same eleven rows as a column's, shifted by one float each.
        withUnsafeTemporaryAllocation(of: UnsafePointer<Float>.self, capacity: 2 * radius + 1) { taps in
            for k in 0...(2 * radius) { taps[k] = UnsafePointer(padded + k) }
            weightedSum(taps.baseAddress!, kernel: kernel, width: width, into: output)
        }
    }

    /// `output[x] = Σ kernel[k] · rows[k][x]` over the eleven taps, eight lanes at a time, pairing the taps the
    /// symmetric kernel weighs alike.
    @inline(__always)
    static func weightedSum(
        _ rows: UnsafePointer<UnsafePointer<Float>>, kernel: UnsafePointer<Float>, width: Int,
        into output: UnsafeMutablePointer<Float>
    ) {
        let (w0, w1, w2, w3, w4, w5) = (kernel[0], kernel[1], kernel[2], kernel[3], kernel[4], kernel[5])
        let (r0, r1, r2, r3, r4, r5) = (rows[0], rows[1], rows[2], rows[3], rows[4], rows[5])
        let (r6, r7, r8, r9, r10) = (rows[6], rows[7], rows[8], rows[9], rows[10])
        typealias Lanes = SIMD8<Float>
        @inline(__always) func load(_ row: UnsafePointer<Float>, _ x: Int) -> Lanes {
            UnsafeRawPointer(row + x).loadUnaligned(as: Lanes.self)
        }
        var x = 0
        while x + Lanes.scalarCount <= width {
            var sum = load(r5, x) * w5
            sum += (load(r0, x) + load(r10, x)) * w0
            sum += (load(r1, x) + load(r9, x)) * w1
            sum += (load(r2, x) + load(r8, x)) * w2
            sum += (load(r3, x) + load(r7, x)) * w3
            sum += (load(r4, x) + load(r6, x)) * w4
            UnsafeMutableRawPointer(output + x).storeBytes(of: sum, as: Lanes.self)
            x += Lanes.scalarCount
        }
        while x < width {
            var sum = r5[x] * w5
            sum += (r0[x] + r10[x]) * w0
            sum += (r1[x] + r9[x]) * w1
            sum += (r2[x] + r8[x]) * w2
            sum += (r3[x] + r7[x]) * w3
            sum += (r4[x] + r6[x]) * w4
            output[x] = sum
            x += 1
        }
    }
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
    private let taps: UnsafeMutablePointer<UnsafePointer<Float>>

    init(width: Int, height: Int, inputs: Int) {
        (self.width, self.height, self.inputs) = (width, height, inputs)
        ring = .allocate(capacity: inputs * Self.ringRows * width)
        padded = .allocate(capacity: width + 2 * GaussianBlur.radius)
        padded.initialize(repeating: 0, count: width + 2 * GaussianBlur.radius)
        output = .allocate(capacity: inputs * width)
        kernel = .allocate(capacity: GaussianBlur.kernel.count)
        kernel.initialize(from: GaussianBlur.kernel, count: GaussianBlur.kernel.count)
        taps = .allocate(capacity: Self.ringRows)
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
        var next = 0
        for y in 0..<height {
            while next <= min(height - 1, y + radius) {
                let slot = next % Self.ringRows
                for input in 0..<inputs {
                    fill(next, input, padded + radius)
                    GaussianBlur.blurRow(
                        padded, width: width, kernel: kernel, into: ring + (input * Self.ringRows + slot) * width)
                }
                next += 1
            }
            for input in 0..<inputs {
                for k in -radius...radius {
                    var row = y + k
                    if row < 0 { row = -row - 1 }
                    if row >= height { row = 2 * height - row - 1 }
                    taps[k + radius] = UnsafePointer(ring + (input * Self.ringRows + row % Self.ringRows) * width)
                }
                GaussianBlur.weightedSum(taps, kernel: kernel, width: width, into: output + input * width)
            }
            body(y, output)
        }
    }
}
