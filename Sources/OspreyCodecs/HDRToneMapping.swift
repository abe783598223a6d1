#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// HDR pixels (the PQ and HLG transfers of ITU-R BT.2100) to 8-bit SDR sRGB, for display where HDR is not: web pages,
/// thumbnails, every output Osprey writes.
///
/// The method, in linear light:
/// 1. The samples (decoded at 16 bits) become display light in cd/m²: PQ by its EOTF (SMPTE ST 2084); HLG by its
///    inverse OETF and the reference OOTF for a 1,000 cd/m² display (system gamma 1.2), both as BT.2100 defines them.
/// 2. Light is taken relative to HDR reference white, 203 cd/m² (ITU-R BT.2408): reference white becomes SDR white.
/// 3. The luminance (of the source primaries) passes unchanged up to half of reference white; above, a shoulder
///    compresses it so that the picture's own brightest luminance (measured over its pixels; libavif 0.11 does not
///    read `clli`) reaches SDR white: y = k + (1 − k)·t(1 + t/T²)/(1 + t) with k = 0.5, t = (x − k)/(1 − k),
///    T = (peak/203 − k)/(1 − k) — an extended Reinhard curve, continuous with its slope at the knee, which keeps
///    the gradation of skies and highlights. The colour is scaled by the luminance's ratio, so hues stay as mastered.
/// 4. The primaries (BT.2020, Display P3, BT.709, …) are converted to sRGB's by their matrices; what falls outside
///    sRGB is clipped per channel. Then sRGB's curve, rounded to 8 bits.
enum HDRToneMapping {
    enum Transfer: Sendable {
        case pq
        case hlg

        /// The transfer an H.273 `transfer_characteristics` code point names, when it is an HDR one.
        init?(codePoint: Int) {
            switch codePoint {
            case 16: self = .pq
            case 18: self = .hlg
            default: return nil
            }
        }
    }

    /// HDR reference white (ITU-R BT.2408), which becomes SDR white.
    static let referenceWhite = 203.0
    /// The peak of BT.2100's HLG reference display, for which its OOTF is applied.
    static let nominalPeak = 1_000.0
    /// Below this fraction of reference white, luminance passes unchanged.
    static let knee = 0.5

    /// `samples` (16-bit RGB or RGBA, `rowLength` samples a row) in `primaries` (an H.273 code point Osprey knows),
    /// tone-mapped into an 8-bit sRGB buffer of `format` (`.rgb8` or `.rgba8`, alpha copied down to 8 bits).
    static func sRGB(
        from samples: UnsafeBufferPointer<UInt16>, width: Int, height: Int, rowLength: Int, format: PixelFormat,
        transfer: Transfer, primaries: Int
    ) throws(CodecError) -> PixelBuffer {
        var pixels = try PixelBuffer(width: width, height: height, format: format)
        let channels = format.bytesPerPixel
        let toSRGB = conversion(from: primaries)
        let luminance = luminanceWeights(of: primaries)
        let linear = transfer == .pq ? Self.pqTable : Self.hlgTable
        let peak = contentPeak(
            samples, width: width, height: height, rowLength: rowLength, channels: channels,
            linear: linear, luminance: luminance, transfer: transfer)
        let headroom = max(peak / referenceWhite - knee, 1e-3) / (1 - knee)
        let stride = pixels.bytesPerRow
        pixels.withUnsafeMutableBytes { output in
            for y in 0..<height {
                let row = y * rowLength
                let out = output.baseAddress!.assumingMemoryBound(to: UInt8.self) + y * stride
                for x in 0..<width {
                    let index = row + x * channels
                    var r = Double(linear[Int(samples[index])])
                    var g = Double(linear[Int(samples[index + 1])])
                    var b = Double(linear[Int(samples[index + 2])])
                    if transfer == .hlg {
                        // The OOTF: display light = peak · Ys^(γ−1) · E, with γ = 1.2.
                        let scene = luminance.0 * r + luminance.1 * g + luminance.2 * b
                        let gain = nominalPeak * (scene > 0 ? pow(scene, 0.2) : 0)
                        (r, g, b) = (r * gain, g * gain, b * gain)
                    }
                    // Relative to reference white, then the shoulder on luminance.
                    (r, g, b) = (r / referenceWhite, g / referenceWhite, b / referenceWhite)
                    let level = luminance.0 * r + luminance.1 * g + luminance.2 * b
                    if level > knee {
                        let t = (level - knee) / (1 - knee)
                        let mapped = knee + (1 - knee) * t * (1 + t / (headroom * headroom)) / (1 + t)
                        let scale = mapped / level
                        (r, g, b) = (r * scale, g * scale, b * scale)
                    }
                    let m = toSRGB
                    let red = m.0 * r + m.1 * g + m.2 * b
                    let green = m.3 * r + m.4 * g + m.5 * b
                    let blue = m.6 * r + m.7 * g + m.8 * b
                    let pixel = out + x * channels
                    pixel[0] = encode(red)
                    pixel[1] = encode(green)
                    pixel[2] = encode(blue)
                    if channels == 4 { pixel[3] = UInt8(truncatingIfNeeded: (Int(samples[index + 3]) + 128) / 257) }
                }
            }
        }
        return pixels
    }

    /// The brightest luminance of the picture as displayed, in cd/m², between reference white and PQ's 10,000:
    /// what the shoulder brings to SDR white.
    private static func contentPeak(
        _ samples: UnsafeBufferPointer<UInt16>, width: Int, height: Int, rowLength: Int, channels: Int,
        linear: [Float], luminance: (Double, Double, Double), transfer: Transfer
    ) -> Double {
        var brightest = 0.0
        for y in 0..<height {
            let row = y * rowLength
            for x in 0..<width {
                let index = row + x * channels
                let level =
                    luminance.0 * Double(linear[Int(samples[index])]) + luminance.1
                    * Double(linear[Int(samples[index + 1])]) + luminance.2 * Double(linear[Int(samples[index + 2])])
                brightest = max(brightest, level)
            }
        }
        let display = transfer == .hlg ? nominalPeak * pow(max(brightest, 0), 1.2) : brightest
        return min(max(display, referenceWhite), 10_000)
    }

    /// sRGB's curve on linear light clipped to [0, 1], rounded to 8 bits (a 4,096-entry table).
    private static func encode(_ value: Double) -> UInt8 {
        let clipped = min(max(value, 0), 1)
        return srgbTable[Int(clipped * 4_095 + 0.5)]
    }

    private static let srgbTable: [UInt8] = (0..<4_096).map { index in
        let linear = Double(index) / 4_095
        let encoded = linear <= 0.003_130_8 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055
        return UInt8((encoded * 255).rounded())
    }

    /// PQ's EOTF for every 16-bit code: display light in cd/m² (0 to 10,000).
    private static let pqTable: [Float] = (0..<65_536).map { code in
        let (m1, m2) = (2_610.0 / 16_384, 2_523.0 / 4_096 * 128)
        let (c1, c2, c3) = (3_424.0 / 4_096, 2_413.0 / 4_096 * 32, 2_392.0 / 4_096 * 32)
        let p = pow(Double(code) / 65_535, 1 / m2)
        return Float(10_000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1))
    }

    /// HLG's inverse OETF for every 16-bit code: scene light, 0 to 1.
    private static let hlgTable: [Float] = (0..<65_536).map { code in
        let (a, b, c) = (0.178_832_77, 0.284_668_92, 0.559_910_73)
        let e = Double(code) / 65_535
        return Float(e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12)
    }

    /// The luminance row (Y of XYZ) of `primaries`' RGB-to-XYZ matrix.
    private static func luminanceWeights(of primaries: Int) -> (Double, Double, Double) {
        let m = rgbToXYZ(CodingIndependentCodePoints.chromaticities[primaries] ?? Self.bt709)
        return (m[3], m[4], m[5])
    }

    /// The matrix from linear `primaries` to linear sRGB (BT.709) primaries, row-major.
    private static func conversion(
        from primaries: Int
    ) -> (
        Double, Double, Double, Double, Double, Double, Double, Double, Double
    ) {
        let source = rgbToXYZ(CodingIndependentCodePoints.chromaticities[primaries] ?? Self.bt709)
        let m = product(inverse(rgbToXYZ(Self.bt709)), source)
        return (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
    }

    private static let bt709 = CodingIndependentCodePoints.chromaticities[1]!

    /// RGB to XYZ for primaries and white given as CIE xy: the primaries' XYZ (Y = 1) scaled so that RGB = 1 is the
    /// white. Row-major 3 × 3.
    private static func rgbToXYZ(
        _ chromaticities: (
            CodingIndependentCodePoints.XY, CodingIndependentCodePoints.XY,
            CodingIndependentCodePoints.XY, CodingIndependentCodePoints.XY
        )
    ) -> [Double] {
        let (white, red, green, blue) = chromaticities
        func xyz(_ p: CodingIndependentCodePoints.XY) -> [Double] { [p.0 / p.1, 1, (1 - p.0 - p.1) / p.1] }
        let (r, g, b, w) = (xyz(red), xyz(green), xyz(blue), xyz(white))
        let columns = [r[0], g[0], b[0], r[1], g[1], b[1], r[2], g[2], b[2]]
        let inv = inverse(columns)
        let s = [
            inv[0] * w[0] + inv[1] * w[1] + inv[2] * w[2], inv[3] * w[0] + inv[4] * w[1] + inv[5] * w[2],
            inv[6] * w[0] + inv[7] * w[1] + inv[8] * w[2],
        ]
        return (0..<9).map { columns[$0] * s[$0 % 3] }
    }

    private static func product(_ a: [Double], _ b: [Double]) -> [Double] {
        (0..<9).map { index in
            let (row, column) = (index / 3, index % 3)
            return (0..<3).reduce(0) { $0 + a[row * 3 + $1] * b[$1 * 3 + column] }
        }
    }

    private static func inverse(_ m: [Double]) -> [Double] {
        let determinant =
            m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6])
        let cofactors = [
            m[4] * m[8] - m[5] * m[7], m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
            m[5] * m[6] - m[3] * m[8], m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
            m[3] * m[7] - m[4] * m[6], m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3],
        ]
        return cofactors.map { $0 / determinant }
    }
}
