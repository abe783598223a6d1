internal import COspreyCodecShims
internal import COspreyLibraryLoader
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a decoder does with an image's embedded colour profile (``DecodingOptions/colorHandling``).
public enum ColorHandling: Sendable, Hashable {
    /// Convert the pixels to sRGB (relative colorimetric, as libvips and browsers do), and drop the profile: every
    /// output then shows the colours the image was taken in without needing a profile. The default. Images without a
    /// profile, or with an sRGB one, are left exactly as they are.
    case convertToSRGB
    /// Leave the pixels as stored and carry the profile on ``Image/colorProfile``, for an encoder to embed again. (A
    /// CMYK JPEG is still converted: there are no CMYK pixels in Osprey's model.)
    case keepProfile
    /// Drop the profile and leave the pixels as stored (CMYK converted without one, as before colour management).
    case ignore
}

/// Conversions to sRGB: one transform per profile and pixel layout, made once with Little CMS and shared by every
/// thread, in a bounded cache.
enum ColorConversion {
    /// The pixel layouts a transform converts.
    enum Layout: Hashable {
        case rgb, rgba, gray, grayAlpha
        /// Four bytes per pixel of CMYK, as a JPEG stores it: `inverted` for Adobe's inverted CMYK. Converted to RGB.
        case cmyk(inverted: Bool)

        /// The layout of pixels of `format`.
        init(_ format: PixelFormat) {
            switch format {
            case .rgb8: self = .rgb
            case .rgba8: self = .rgba
            case .gray8: self = .gray
            case .grayAlpha8: self = .grayAlpha
            }
        }
    }

    /// What a transform is for: a profile (by content) and a layout; `allowsTables` false keeps Little CMS converting
    /// where tables could (for tests that compare the two).
    struct Key: Hashable {
        let profile: ColorProfile
        let layout: Layout
        var allowsTables = true
    }

    /// The transforms made, in the order made; at most ``capacity`` (a stream of distinct profiles cannot grow it
    /// without bound: the oldest is dropped, and freed once no conversion holds it).
    private static let transforms = Mutex<(entries: [Key: ColorTransform], order: [Key])>(([:], []))
    static let capacity = 64

    /// Converts `pixels` in place from `profile` to sRGB: RGB to RGB, gray to gray with sRGB's tone curve. `false`,
    /// the pixels untouched, when the profile and the pixels do not go together (an RGB profile on a gray image) or
    /// no transform can be made.
    static func convertToSRGB(
        _ pixels: inout PixelBuffer, from profile: ColorProfile, allowsTables: Bool = true
    ) -> Bool {
        let key = Key(profile: profile, layout: Layout(pixels.format), allowsTables: allowsTables)
        guard let transform = transform(for: key) else {
            return false
        }
        let (width, height, bytesPerRow, components) =
            (pixels.width, pixels.height, pixels.bytesPerRow, pixels.format.bytesPerPixel)
        withExtendedLifetime(transform) {
            pixels.withUnsafeMutableBytes { bytes in
                osprey_rows_convert(
                    transform.converter, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytesPerRow,
                    UInt32(width), UInt32(height), UInt32(components))
            }
        }
        return true
    }

    /// CMYK pixels (4 bytes each, `inverted` or not) converted from `profile` to sRGB RGB; `nil` when the profile is
    /// not a CMYK one or no transform can be made.
    static func rgb(fromCMYK pixels: PixelBuffer, inverted: Bool, profile: ColorProfile) -> PixelBuffer? {
        guard let transform = transform(for: Key(profile: profile, layout: .cmyk(inverted: inverted))),
            var output = try? PixelBuffer(width: pixels.width, height: pixels.height, format: .rgb8)
        else { return nil }
        let (width, height, inStride, outStride) = (pixels.width, pixels.height, pixels.bytesPerRow, output.bytesPerRow)
        pixels.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                transform.apply(
                    source.baseAddress!, target.baseAddress!, width: width, height: height, inputStride: inStride,
                    outputStride: outStride)
            }
        }
        return output
    }

    /// Empties the cache of transforms (those in use live on until their conversions end).
    static func removeAllTransforms() {
        transforms.withLock { $0 = ([:], []) }
    }

    /// The transform for `key`, from the cache or made now; `nil` when it cannot be made.
    static func transform(for key: Key) -> ColorTransform? {
        if let cached = transforms.withLock({ $0.entries[key] }) { return cached }
        guard let made = ColorTransform(key) else { return nil }
        return transforms.withLock { cache in
            if let raced = cache.entries[key] { return raced }
            if cache.order.count >= capacity {
                cache.entries[cache.order.removeFirst()] = nil
            }
            cache.entries[key] = made
            cache.order.append(key)
            return made
        }
    }
}

/// A transform from one profile to sRGB for one pixel layout.
///
/// Little CMS makes every transform, and converts CMYK. For the layouts that convert in place it is then made faster
/// where its result can be had without it: a gray conversion becomes a 256-entry table (Little CMS's own results), and
/// an RGB profile of three tone curves and a matrix (Display P3, Adobe RGB: nearly every camera and phone profile)
/// becomes tables of each input value's contribution to linear sRGB and a table of sRGB's tone curve, about 5 times
/// faster than Little CMS. The tables are kept only when they agree with Little CMS within one level on a grid of
/// 5,900 colours; otherwise Little CMS converts.
// @unchecked Sendable: it owns C memory (a Little CMS transform or tables), freed in deinit. Nothing changes it after
// init: Little CMS transforms are made with cmsFLAGS_NOCACHE, so cmsDoTransform* may run on several threads at once.
final class ColorTransform: @unchecked Sendable {
    private enum Kind {
        case littleCMS(cmsHTRANSFORM)
        case matrix(OpaquePointer)
        case table(UnsafeMutablePointer<UInt8>)
    }

    private let kind: Kind

    init?(_ key: ColorConversion.Key) {
        let made = ColorProfiles.context.withHandle { context -> Kind? in
            guard let transform = Self.make(key, context: context) else { return nil }
            switch key.layout {
            case _ where !key.allowsTables:
                return .littleCMS(transform)
            case .gray, .grayAlpha:
                let table = Self.grayTable(transform, layout: key.layout)
                lcms.cmsDeleteTransform(transform)
                return .table(table)
            case .rgb, .rgba:
                guard let matrix = Self.matrixTables(key, context: context, checkedAgainst: transform) else {
                    return .littleCMS(transform)
                }
                lcms.cmsDeleteTransform(transform)
                return .matrix(matrix)
            case .cmyk:
                return .littleCMS(transform)
            }
        }
        guard let made else { return nil }
        kind = made
    }

    deinit {
        switch kind {
        case .littleCMS(let handle): lcms.cmsDeleteTransform(handle)
        case .matrix(let tables): osprey_rgb_matrix_transform_free(tables)
        case .table(let table): table.deallocate()
        }
    }

    /// Whether the fast tables replace Little CMS for this transform.
    var usesTables: Bool {
        if case .littleCMS = kind { return false }
        return true
    }

    /// The in-place conversion, for the C code that converts rows as they are decoded. Valid while this transform
    /// lives.
    var converter: osprey_row_converter {
        switch kind {
        case .littleCMS:
            osprey_row_converter(
                convert: { context, rows, bytesPerRow, width, count, _ in
                    // Little CMS converts in place when input and output have the same layout.
                    let transform = Unmanaged<ColorTransform>.fromOpaque(context!).takeUnretainedValue()
                    transform.apply(
                        rows!, rows!, width: Int(width), height: Int(count), inputStride: bytesPerRow,
                        outputStride: bytesPerRow)
                },
                context: Unmanaged.passUnretained(self).toOpaque())
        case .matrix(let tables):
            osprey_row_converter(convert: osprey_rgb_matrix_convert, context: UnsafeMutableRawPointer(tables))
        case .table(let table):
            osprey_row_converter(convert: osprey_table_convert, context: UnsafeMutableRawPointer(table))
        }
    }

    /// Converts with Little CMS: the transforms of CMYK, and of the profiles the tables cannot stand for.
    func apply(
        _ input: UnsafeRawPointer, _ output: UnsafeMutableRawPointer, width: Int, height: Int, inputStride: Int,
        outputStride: Int
    ) {
        guard case .littleCMS(let handle) = kind else {
            preconditionFailure("tables convert in place, through the converter")
        }
        lcms.cmsDoTransformLineStride(
            handle, input, output, cmsUInt32Number(width), cmsUInt32Number(height), cmsUInt32Number(inputStride),
            cmsUInt32Number(outputStride), 0, 0)
    }

    /// Little CMS's result for every gray level, as a table.
    private static func grayTable(
        _ transform: cmsHTRANSFORM, layout: ColorConversion.Layout
    ) -> UnsafeMutablePointer<
        UInt8
    > {
        let components = layout == .grayAlpha ? 2 : 1
        var levels = [UInt8](repeating: 255, count: 256 * components)
        for level in 0..<256 { levels[level * components] = UInt8(level) }
        lcms.cmsDoTransform(transform, levels, &levels, 256)
        let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        for level in 0..<256 { table[level] = levels[level * components] }
        return table
    }

    /// Tables for an RGB profile of three tone curves and a matrix (and no lookup table Little CMS would use
    /// instead), when they agree with `transform` (Little CMS's) within one level on every colour of a grid; `nil`
    /// otherwise.
    private static func matrixTables(
        _ key: ColorConversion.Key, context: cmsContext?, checkedAgainst transform: cmsHTRANSFORM
    ) -> OpaquePointer? {
        guard let source = ColorProfiles.open(key.profile.data, in: context) else { return nil }
        defer { _ = lcms.cmsCloseProfile(source) }
        guard let sRGB = lcms.cmsCreate_sRGBProfileTHR(context) else { return nil }
        defer { _ = lcms.cmsCloseProfile(sRGB) }
        let intent = cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC)
        guard lcms.cmsIsMatrixShaper(source) != 0,
            lcms.cmsIsCLUT(source, intent, cmsUInt32Number(LCMS_USED_AS_INPUT)) == 0,
            let from = colorants(of: source), let to = colorants(of: sRGB), let toInverse = inverse(to)
        else { return nil }
        let curveTags = [cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag]
        let curves = curveTags.compactMap { lcms.cmsReadTag(source, $0).map(OpaquePointer.init) }
        guard curves.count == 3 else { return nil }
        // Source RGB to sRGB RGB, both in linear light: through XYZ (D50, where ICC profiles put their colorants).
        let matrix = product(toInverse, from)
        guard matrix.allSatisfy(\.isFinite) else { return nil }
        // The largest a sum of three contributions can reach decides the fixed-point scale: it must fit 16 bits.
        let reach = (0..<3).map { row in (0..<3).map { abs(matrix[row * 3 + $0]) }.reduce(0, +) }.max() ?? .infinity
        let scale: Int32 = reach < 1.99 ? 16383 : reach < 3.99 ? 8191 : 0
        guard scale > 0 else { return nil }

        var columns = [Int16](repeating: 0, count: 3 * 256 * 4)
        for channel in 0..<3 {
            for value in 0..<256 {
                let linear = Double(min(max(lcms.cmsEvalToneCurveFloat(curves[channel], Float(value) / 255), 0), 1))
                for output in 0..<3 {
                    columns[(channel * 256 + value) * 4 + output] = Int16(
                        (matrix[output * 3 + channel] * linear * Double(scale)).rounded())
                }
            }
        }
        let encode = (0...Int(scale)).map { index -> UInt8 in
            let linear = Double(index) / Double(scale)
            let encoded = linear <= 0.003_130_8 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055
            return UInt8((encoded * 255).rounded())
        }
        guard let tables = osprey_rgb_matrix_transform_create(columns, encode, UInt32(scale)) else { return nil }
        guard agree(tables, with: transform, layout: key.layout) else {
            osprey_rgb_matrix_transform_free(tables)
            return nil
        }
        return tables
    }

    /// Whether the tables give Little CMS's results within one level on a 17 × 17 × 17 grid, every gray and every
    /// level of each primary alone.
    private static func agree(
        _ tables: OpaquePointer, with transform: cmsHTRANSFORM,
        layout: ColorConversion.Layout
    ) -> Bool {
        var colours: [(UInt8, UInt8, UInt8)] = []
        let steps = (0...16).map { UInt8(min($0 * 16, 255)) }
        for r in steps { for g in steps { for b in steps { colours.append((r, g, b)) } } }
        for level in 0...255 {
            let v = UInt8(level)
            colours += [(v, v, v), (v, 0, 0), (0, v, 0), (0, 0, v)]
        }
        let components = layout == .rgba ? 4 : 3
        var pixels = [UInt8](repeating: 255, count: colours.count * components)
        for (index, colour) in colours.enumerated() {
            (pixels[index * components], pixels[index * components + 1], pixels[index * components + 2]) = colour
        }
        var expected = pixels
        lcms.cmsDoTransform(transform, pixels, &expected, cmsUInt32Number(colours.count))
        pixels.withUnsafeMutableBufferPointer { buffer in
            osprey_rgb_matrix_convert(
                UnsafeMutableRawPointer(tables), buffer.baseAddress, buffer.count, UInt32(colours.count), 1,
                UInt32(components))
        }
        return zip(pixels, expected).allSatisfy { abs(Int($0) - Int($1)) <= 1 }
    }

    /// The matrix whose columns are the profile's red, green and blue colorants (XYZ), row-major.
    private static func colorants(of profile: cmsHPROFILE) -> [Double]? {
        let tags = [cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag]
        let columns = tags.compactMap { lcms.cmsReadTag(profile, $0)?.assumingMemoryBound(to: cmsCIEXYZ.self).pointee }
        guard columns.count == 3 else { return nil }
        return [
            columns[0].X, columns[1].X, columns[2].X,
            columns[0].Y, columns[1].Y, columns[2].Y,
            columns[0].Z, columns[1].Z, columns[2].Z,
        ]
    }

    /// The inverse of a row-major 3 × 3 matrix, `nil` when it has none.
    private static func inverse(_ m: [Double]) -> [Double]? {
        let cofactors = [
            m[4] * m[8] - m[5] * m[7], m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
            m[5] * m[6] - m[3] * m[8], m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
            m[3] * m[7] - m[4] * m[6], m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3],
        ]
        let determinant = m[0] * cofactors[0] + m[1] * cofactors[3] + m[2] * cofactors[6]
        guard abs(determinant) > 1e-12 else { return nil }
        return cofactors.map { $0 / determinant }
    }

    /// The product of two row-major 3 × 3 matrices.
    private static func product(_ a: [Double], _ b: [Double]) -> [Double] {
        (0..<9).map { index in
            let (row, column) = (index / 3, index % 3)
            return (0..<3).map { a[row * 3 + $0] * b[$0 * 3 + column] }.reduce(0, +)
        }
    }

    /// A Little CMS pixel format: `TYPE_RGB_8` and its like, whose macros Swift does not import.
    static func format(_ colorSpace: Int32, channels: UInt32, extra: UInt32 = 0, inverted: Bool = false) -> UInt32 {
        (UInt32(colorSpace) << 16) | (inverted ? 1 << 13 : 0) | (extra << 7) | (channels << 3) | 1
    }

    private static func make(_ key: ColorConversion.Key, context: cmsContext?) -> cmsHTRANSFORM? {
        let profile = key.profile
        let (input, output, flags): (UInt32, UInt32, UInt32)
        let toGray: Bool
        switch key.layout {
        case .rgb where profile.colorSpace == .rgb:
            (input, output, flags, toGray) = (format(PT_RGB, channels: 3), format(PT_RGB, channels: 3), 0, false)
        case .rgba where profile.colorSpace == .rgb:
            let rgba = format(PT_RGB, channels: 3, extra: 1)
            (input, output, flags, toGray) = (rgba, rgba, UInt32(cmsFLAGS_COPY_ALPHA), false)
        case .gray where profile.colorSpace == .gray:
            (input, output, flags, toGray) = (format(PT_GRAY, channels: 1), format(PT_GRAY, channels: 1), 0, true)
        case .grayAlpha where profile.colorSpace == .gray:
            let grayAlpha = format(PT_GRAY, channels: 1, extra: 1)
            (input, output, flags, toGray) = (grayAlpha, grayAlpha, UInt32(cmsFLAGS_COPY_ALPHA), true)
        case .cmyk(let inverted) where profile.colorSpace == .cmyk:
            (input, output, flags, toGray) = (
                format(PT_CMYK, channels: 4, inverted: inverted), format(PT_RGB, channels: 3), 0, false
            )
        default:
            return nil
        }
        guard let source = ColorProfiles.open(profile.data, in: context) else { return nil }
        defer { _ = lcms.cmsCloseProfile(source) }
        guard let destination = toGray ? grayWithSRGBCurve(context) : lcms.cmsCreate_sRGBProfileTHR(context) else {
            return nil
        }
        defer { _ = lcms.cmsCloseProfile(destination) }
        return lcms.cmsCreateTransformTHR(
            context, source, input, destination, output, cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC),
            UInt32(cmsFLAGS_NOCACHE) | flags)
    }

    /// A gray profile with sRGB's tone curve and a D50 white: a gray image converted to it has the gray levels an sRGB
    /// display shows for R = G = B.
    private static func grayWithSRGBCurve(_ context: cmsContext?) -> cmsHPROFILE? {
        // sRGB's curve as Little CMS's parametric type 4: Y = (aX + b)^g for X >= d, else cX.
        let parameters: [cmsFloat64Number] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
        guard let curve = lcms.cmsBuildParametricToneCurve(context, 4, parameters) else { return nil }
        defer { lcms.cmsFreeToneCurve(curve) }
        return lcms.cmsCreateGrayProfileTHR(context, lcms.cmsD50_xyY(), curve)
    }
}
