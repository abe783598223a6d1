internal import COspreyLCMS
import Synchronization

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

/// Conversions to sRGB with Little CMS: one transform per profile and pixel layout, made once and shared by every
/// thread, in a bounded cache.
enum ColorConversion {
    /// The pixel layouts a transform converts.
    enum Layout: Hashable {
        case rgb, rgba, gray, grayAlpha
        /// Four bytes per pixel of CMYK, as a JPEG stores it: `inverted` for Adobe's inverted CMYK. Converted to RGB.
        case cmyk(inverted: Bool)
    }

    /// What a transform is for: a profile (by content) and a layout.
    struct Key: Hashable {
        let profile: ColorProfile
        let layout: Layout
    }

    /// The transforms made, in the order made; at most ``capacity`` (a stream of distinct profiles cannot grow it
    /// without bound: the oldest is dropped, and freed once no conversion holds it).
    private static let transforms = Mutex<(entries: [Key: ColorTransform], order: [Key])>(([:], []))
    static let capacity = 64

    /// `pixels` (of `layout`) converted from `profile` to sRGB: RGB layouts to RGB, gray to gray with sRGB's tone
    /// curve, CMYK to RGB. `nil` when the profile and the layout do not go together (an RGB profile on a gray image)
    /// or Little CMS cannot make the transform: the caller keeps the pixels as they are.
    static func toSRGB(_ pixels: PixelBuffer, layout: Layout, from profile: ColorProfile) -> PixelBuffer? {
        guard let transform = transform(for: Key(profile: profile, layout: layout)) else { return nil }
        let outputFormat: PixelFormat =
            switch layout {
            case .rgb, .cmyk: .rgb8
            case .rgba: .rgba8
            case .gray: .gray8
            case .grayAlpha: .grayAlpha8
            }
        guard var output = try? PixelBuffer(width: pixels.width, height: pixels.height, format: outputFormat) else {
            return nil
        }
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

    /// The transform for `key`, from the cache or made now; `nil` when it cannot be made.
    private static func transform(for key: Key) -> ColorTransform? {
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

/// A Little CMS transform from one profile to sRGB for one pixel layout.
// @unchecked Sendable: it owns a C pointer (the transform), freed in deinit. The transform is made with
// cmsFLAGS_NOCACHE, so cmsDoTransform* changes nothing in it and may run on several threads at once.
final class ColorTransform: @unchecked Sendable {
    private let handle: cmsHTRANSFORM

    init?(_ key: ColorConversion.Key) {
        let made = ColorProfiles.context.withHandle { context -> cmsHTRANSFORM? in
            Self.make(key, context: context)
        }
        guard let made else { return nil }
        handle = made
    }

    deinit { cmsDeleteTransform(handle) }

    func apply(
        _ input: UnsafeRawPointer, _ output: UnsafeMutableRawPointer, width: Int, height: Int, inputStride: Int,
        outputStride: Int
    ) {
        cmsDoTransformLineStride(
            handle, input, output, cmsUInt32Number(width), cmsUInt32Number(height), cmsUInt32Number(inputStride),
            cmsUInt32Number(outputStride), 0, 0)
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
        defer { cmsCloseProfile(source) }
        guard let destination = toGray ? grayWithSRGBCurve(context) : cmsCreate_sRGBProfileTHR(context) else {
            return nil
        }
        defer { cmsCloseProfile(destination) }
        return cmsCreateTransformTHR(
            context, source, input, destination, output, cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC),
            UInt32(cmsFLAGS_NOCACHE) | flags)
    }

    /// A gray profile with sRGB's tone curve and a D50 white: a gray image converted to it has the gray levels an sRGB
    /// display shows for R = G = B.
    private static func grayWithSRGBCurve(_ context: cmsContext?) -> cmsHPROFILE? {
        // sRGB's curve as Little CMS's parametric type 4: Y = (aX + b)^g for X >= d, else cX.
        let parameters: [cmsFloat64Number] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
        guard let curve = cmsBuildParametricToneCurve(context, 4, parameters) else { return nil }
        defer { cmsFreeToneCurve(curve) }
        return cmsCreateGrayProfileTHR(context, cmsD50_xyY(), curve)
    }
}
