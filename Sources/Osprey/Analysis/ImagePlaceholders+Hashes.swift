import FoundationEssentials
import OspreyCodecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ImagePlaceholders {
    /// The longest side BlurHash and ThumbHash read: a larger image is first reduced to fit 100 × 100 (both
    /// describe a blur; more pixels change nothing but the time).
    public static let hashSide = 100

    /// The pixels fitted within 100 × 100 (as they are when they already fit).
    func reduced() throws -> PixelBuffer {
        guard pixels.width > Self.hashSide || pixels.height > Self.hashSide else { return pixels }
        let resize = ImageProcessors.Resize(width: Self.hashSide, height: Self.hashSide, fit: .inside)
        return try resize.process(Image(pixels: pixels)).frames[0].pixels.converted(to: .rgba8)
    }

    // MARK: BlurHash

    /// The image's BlurHash (Wolt's algorithm): `componentsX` × `componentsY` cosine components (each 1…9, 4 × 3 by
    /// default) of the linear-light pixels, base-83 encoded. Alpha is ignored, as the format has none.
    ///
    /// The arithmetic is the reference encoder's, step for step (PyPI `blurhash`, a port of the Swift original), so
    /// the same pixels give the same string.
    ///
    /// - Throws: `ImageProcessingError` when a component count is outside 1…9.
    public func blurHash(componentsX: Int = 4, componentsY: Int = 3) throws -> String {
        guard (1...9).contains(componentsX), (1...9).contains(componentsY) else {
            throw ImageProcessingError(
                processor: "blurHash", reason: "components must be 1…9 on each axis, not \(componentsX)×\(componentsY)")
        }
        let source = try reduced()
        let (w, h) = (source.width, source.height)
        let (width, height) = (Double(w), Double(h))
        var linear = [Double](repeating: 0, count: w * h * 3)
        let table = (0...255).map { Self.srgbToLinear(Double($0)) }
        source.withUnsafeBytes { bytes in
            for y in 0..<h {
                let row = y * source.bytesPerRow
                for x in 0..<w {
                    for channel in 0..<3 {
                        linear[(y * w + x) * 3 + channel] = table[Int(bytes[row + x * 4 + channel])]
                    }
                }
            }
        }
        var components: [(Double, Double, Double)] = []
        var maximumAC = 0.0
        for j in 0..<componentsY {
            let cosinesY = (0..<h).map { cos(Double.pi * Double(j) * Double($0) / height) }
            for i in 0..<componentsX {
                let cosinesX = (0..<w).map { cos(Double.pi * Double(i) * Double($0) / width) }
                let normalisation = i == 0 && j == 0 ? 1.0 : 2.0
                var (r, g, b) = (0.0, 0.0, 0.0)
                for y in 0..<h {
                    for x in 0..<w {
                        let basis = normalisation * cosinesX[x] * cosinesY[y]
                        let index = (y * w + x) * 3
                        r += basis * linear[index]
                        g += basis * linear[index + 1]
                        b += basis * linear[index + 2]
                    }
                }
                let area = width * height
                components.append((r / area, g / area, b / area))
                if i != 0 || j != 0 { maximumAC = max(maximumAC, abs(r / area), abs(g / area), abs(b / area)) }
            }
        }
        let dc = components[0]
        let dcValue = Self.linearToSRGB(dc.0) << 16 + Self.linearToSRGB(dc.1) << 8 + Self.linearToSRGB(dc.2)
        let quantisedMaximum = Int(max(0, min(82, (maximumAC * 166 - 0.5).rounded(.down))))
        let acScale = Double(quantisedMaximum + 1) / 166
        func quantise(_ value: Double) -> Int {
            let signed = copysign(pow(abs(value / acScale), 0.5), value / acScale)
            return Int(max(0, min(18, (signed * 9 + 9.5).rounded(.down))))
        }
        var hash = Self.base83((componentsX - 1) + (componentsY - 1) * 9, length: 1)
        hash += Self.base83(quantisedMaximum, length: 1)
        hash += Self.base83(dcValue, length: 4)
        for (r, g, b) in components.dropFirst() {
            hash += Self.base83(quantise(r) * 19 * 19 + quantise(g) * 19 + quantise(b), length: 2)
        }
        return hash
    }

    static func srgbToLinear(_ byte: Double) -> Double {
        let value = byte / 255
        return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    static func linearToSRGB(_ linear: Double) -> Int {
        let value = max(0, min(1, linear))
        if value <= 0.0031308 { return Int(value * 12.92 * 255 + 0.5) }
        return Int((1.055 * pow(value, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    static let base83Digits = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    static func base83(_ value: Int, length: Int) -> String {
        var digits: [Character] = []
        var rest = value
        for _ in 0..<length {
            digits.append(base83Digits[rest % 83])
            rest /= 83
        }
        return String(digits.reversed())
    }

    // MARK: ThumbHash

    /// The image's ThumbHash (Evan Wallace's format, alpha and aspect ratio included) as its bytes: 5 to 25 of them,
    /// of which ``thumbHash()`` is the base64.
    ///
    /// The arithmetic is the reference encoder's, step for step (PyPI `thumbhash-python`, a port of the JavaScript
    /// original, with its round-half-to-even), so the same pixels give the same bytes.
    public func thumbHashBytes() throws -> [UInt8] {
        let source = try reduced()
        let (w, h) = (source.width, source.height)
        let count = w * h
        var rgba = [Double](repeating: 0, count: count * 4)
        source.withUnsafeBytes { bytes in
            for y in 0..<h {
                for x in 0..<w {
                    for channel in 0..<4 {
                        rgba[(y * w + x) * 4 + channel] = Double(bytes[y * source.bytesPerRow + x * 4 + channel])
                    }
                }
            }
        }
        var (averageR, averageG, averageB, averageA) = (0.0, 0.0, 0.0, 0.0)
        for i in 0..<count {
            let alpha = rgba[i * 4 + 3] / 255
            averageR += alpha / 255 * rgba[i * 4]
            averageG += alpha / 255 * rgba[i * 4 + 1]
            averageB += alpha / 255 * rgba[i * 4 + 2]
            averageA += alpha
        }
        if averageA > 0 {
            averageR /= averageA
            averageG /= averageA
            averageB /= averageA
        }
        let hasAlpha = averageA < Double(count)
        let lumaLimit = hasAlpha ? 5.0 : 7.0
        let longest = Double(max(w, h))
        let lx = max(1, Int((lumaLimit * Double(w) / longest).rounded(.toNearestOrEven)))
        let ly = max(1, Int((lumaLimit * Double(h) / longest).rounded(.toNearestOrEven)))
        var (l, p, q, a) = ([Double](), [Double](), [Double](), [Double]())
        l.reserveCapacity(count)
        p.reserveCapacity(count)
        q.reserveCapacity(count)
        a.reserveCapacity(count)
        for i in 0..<count {
            let alpha = rgba[i * 4 + 3] / 255
            let r = averageR * (1 - alpha) + alpha / 255 * rgba[i * 4]
            let g = averageG * (1 - alpha) + alpha / 255 * rgba[i * 4 + 1]
            let b = averageB * (1 - alpha) + alpha / 255 * rgba[i * 4 + 2]
            l.append((r + g + b) / 3)
            p.append((r + g) / 2 - b)
            q.append(r - g)
            a.append(alpha)
        }
        func encode(_ channel: [Double], _ nx: Int, _ ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
            var (dc, ac, scale) = (0.0, [Double](), 0.0)
            var fx = [Double](repeating: 0, count: w)
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    var f = 0.0
                    for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
                    for y in 0..<h {
                        let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                        for x in 0..<w { f += channel[x + y * w] * fx[x] * fy }
                    }
                    f /= Double(count)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
            return (dc, ac, scale)
        }
        let luma = encode(l, max(lx, 3), max(ly, 3))
        let yellowBlue = encode(p, 3, 3)
        let redGreen = encode(q, 3, 3)
        let alpha = hasAlpha ? encode(a, 5, 5) : (dc: 1.0, ac: [], scale: 1.0)

        func round(_ value: Double) -> Int { Int(value.rounded(.toNearestOrEven)) }
        let isLandscape = w > h
        var header24 = round(63 * luma.dc)
        header24 |= round(31.5 + 31.5 * yellowBlue.dc) << 6
        header24 |= round(31.5 + 31.5 * redGreen.dc) << 12
        header24 |= round(31 * luma.scale) << 18
        if hasAlpha { header24 |= 1 << 23 }
        var header16 = isLandscape ? ly : lx
        header16 |= round(63 * yellowBlue.scale) << 3
        header16 |= round(63 * redGreen.scale) << 9
        if isLandscape { header16 |= 1 << 15 }
        var acs = [luma.ac, yellowBlue.ac, redGreen.ac]
        if hasAlpha { acs.append(alpha.ac) }
        let acCount = acs.reduce(0) { $0 + $1.count }
        var hash = [UInt8](repeating: 0, count: (hasAlpha ? 6 : 5) + (acCount + 1) / 2)
        hash[0] = UInt8(truncatingIfNeeded: header24)
        hash[1] = UInt8(truncatingIfNeeded: header24 >> 8)
        hash[2] = UInt8(truncatingIfNeeded: header24 >> 16)
        hash[3] = UInt8(truncatingIfNeeded: header16)
        hash[4] = UInt8(truncatingIfNeeded: header16 >> 8)
        if hasAlpha { hash[5] = UInt8(truncatingIfNeeded: round(15 * alpha.dc) | round(15 * alpha.scale) << 4) }
        var index = 0
        let start = hasAlpha ? 6 : 5
        for value in acs.joined() {
            hash[start + index / 2] |= UInt8(truncatingIfNeeded: round(15 * value) << ((index & 1) * 4))
            index += 1
        }
        return hash
    }

    /// ``thumbHashBytes()`` in standard base64, as ThumbHash's tools print it.
    public func thumbHash() throws -> String {
        Data(try thumbHashBytes()).base64EncodedString()
    }
}
