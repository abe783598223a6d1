internal import COspreyLibraryLoader
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An ICC colour profile: the bytes an image embeds to say what its pixel values mean, and what they say.
///
/// Decoders read it (JPEG `APP2`, PNG `iCCP`, WebP `ICCP`) and, by default, convert the pixels to sRGB with it (see
/// ``DecodingOptions/colorHandling``); an image that keeps it carries it as ``Image/colorProfile``, and encoders embed
/// it again.
///
/// ```swift
/// let image = try ImageDecoder.decode(data, options: options)   // colorHandling = .keepProfile
/// image.colorProfile?.name         // "Display P3"
/// image.colorProfile?.colorSpace   // .rgb
/// ```
public struct ColorProfile: Sendable, Hashable, CustomStringConvertible {
    /// The colour space a profile describes pixels in (its header's data colour space).
    public enum ColorSpace: String, Sendable, Hashable {
        case rgb, gray, cmyk
        /// Any other (Lab, YCbCr, n-colour): not used for decoding.
        case other
    }

    /// The profile's bytes, as embedded.
    public let data: [UInt8]
    /// The colour space it describes.
    public let colorSpace: ColorSpace
    /// Its description tag ("Display P3", "Adobe RGB (1998)"), when it has one.
    public let name: String?
    /// Whether it describes sRGB itself (its primaries, white point and tone curves are sRGB's, whatever its name):
    /// pixels in it need no conversion.
    public let isSRGB: Bool
    /// A hash of ``data``, computed once: profiles are compared and cached by it.
    let digest: UInt64

    /// Reads the profile in `data`; `nil` when it is damaged or not a profile a decoder could use (too short, a bad
    /// signature, or one Little CMS cannot parse).
    public init?(data: [UInt8]) {
        let digest = Self.digest(of: data)
        guard let analysis = ColorProfiles.analysis(of: data, digest: digest) else { return nil }
        self.data = data
        self.digest = digest
        colorSpace = analysis.colorSpace
        name = analysis.name
        isSRGB = analysis.isSRGB
    }

    /// Profiles are equal when their bytes are.
    public static func == (lhs: ColorProfile, rhs: ColorProfile) -> Bool {
        lhs.digest == rhs.digest && lhs.data == rhs.data
    }

    /// Hashes the profile's digest.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    /// The profile's name, colour space and size.
    public var description: String { "\(name ?? "unnamed") (\(colorSpace.rawValue), \(data.count) bytes)" }

    /// A compact sRGB profile (Little CMS's, a few hundred bytes), for encoders asked to tag sRGB output.
    public static let sRGB: ColorProfile = {
        let made = ColorProfiles.context.withHandle { context -> [UInt8] in
            guard let profile = lcms.cmsCreate_sRGBProfileTHR(context) else { return [] }
            defer { _ = lcms.cmsCloseProfile(profile) }
            return ColorProfiles.bytes(of: profile)
        }
        return ColorProfile(made, colorSpace: .rgb, name: "sRGB built-in", isSRGB: true)
    }()

    /// A profile whose analysis is known already (one Little CMS made).
    private init(_ data: [UInt8], colorSpace: ColorSpace, name: String?, isSRGB: Bool) {
        self.data = data
        self.digest = Self.digest(of: data)
        self.colorSpace = colorSpace
        self.name = name
        self.isSRGB = isSRGB
    }

    /// FNV-1a over the bytes: cheap, and good enough as a cache key next to the bytes themselves.
    static func digest(of data: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }
}

/// What Little CMS says of profiles, cached by content: an image's profile is parsed once per process, however many
/// images carry it.
enum ColorProfiles {
    struct Analysis: Sendable {
        var colorSpace: ColorProfile.ColorSpace
        var name: String?
        var isSRGB: Bool
        var data: [UInt8]
    }

    /// The Little CMS context every profile and transform of this process is made in.
    static let context = LCMSContext()

    /// Why no profile can be read (liblcms2 could not be opened), or `nil` when Little CMS is there.
    static var unavailability: String? {
        osprey_lcms_failure().map { String(cString: $0) }
    }

    /// Analyses of the profiles seen, by digest; emptied when it holds 256 (a stream of distinct profiles, hostile or
    /// not, cannot grow it without bound).
    private static let analyses = Mutex<[UInt64: Analysis]>([:])

    static func analysis(of data: [UInt8], digest: UInt64) -> Analysis? {
        if let known = analyses.withLock({ $0[digest] }), known.data == data { return known }
        guard let analysis = analyze(data) else { return nil }
        analyses.withLock { cache in
            if cache.count >= 256 { cache = [:] }
            cache[digest] = analysis
        }
        return analysis
    }

    /// The largest profile read: real ones are a few kilobytes, the largest in common use (CMYK press profiles)
    /// under 4 MiB.
    static let maximumSize = 8 << 20

    private static func analyze(_ data: [UInt8]) -> Analysis? {
        // The header: 128 bytes, 'acsp' at 36, a declared size no larger than what is there.
        guard data.count >= 132, data.count <= maximumSize, data[36...39].elementsEqual("acsp".utf8) else { return nil }
        let declared = Int(data[0]) << 24 | Int(data[1]) << 16 | Int(data[2]) << 8 | Int(data[3])
        guard declared >= 132, declared <= data.count else { return nil }
        return context.withHandle { context -> Analysis? in
            guard let profile = open(data, in: context) else { return nil }
            defer { _ = lcms.cmsCloseProfile(profile) }
            let space: ColorProfile.ColorSpace =
                switch lcms.cmsGetColorSpace(profile) {
                case cmsSigRgbData: .rgb
                case cmsSigGrayData: .gray
                case cmsSigCmykData: .cmyk
                default: .other
                }
            return Analysis(
                colorSpace: space, name: name(of: profile), isSRGB: space == .rgb && isSRGB(profile), data: data)
        }
    }

    /// Opens `data` as a profile in `context`; `nil` when Little CMS cannot parse it.
    static func open(_ data: [UInt8], in context: cmsContext?) -> cmsHPROFILE? {
        data.withUnsafeBytes { lcms.cmsOpenProfileFromMemTHR(context, $0.baseAddress, cmsUInt32Number($0.count)) }
    }

    private static func name(of profile: cmsHPROFILE) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let length = lcms.cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", &buffer, 256)
        guard length > 1 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }

    /// Whether `profile` is a matrix-shaper profile with sRGB's colorants (as the ICC's D50-adapted sRGB has them) and
    /// sRGB's tone curve, within what 8-bit pixels could tell apart.
    private static func isSRGB(_ profile: cmsHPROFILE) -> Bool {
        guard lcms.cmsIsMatrixShaper(profile) != 0 else { return false }
        // sRGB's colorants adapted to D50 (Bradford), as sRGB IEC61966-2.1 profiles store them.
        let colorants: [(cmsTagSignature, (Double, Double, Double))] = [
            (cmsSigRedColorantTag, (0.4360, 0.2225, 0.0139)),
            (cmsSigGreenColorantTag, (0.3851, 0.7169, 0.0971)),
            (cmsSigBlueColorantTag, (0.1431, 0.0606, 0.7141)),
        ]
        for (tag, expected) in colorants {
            guard let raw = lcms.cmsReadTag(profile, tag) else { return false }
            let xyz = raw.assumingMemoryBound(to: cmsCIEXYZ.self).pointee
            guard abs(xyz.X - expected.0) < 0.003, abs(xyz.Y - expected.1) < 0.003, abs(xyz.Z - expected.2) < 0.003
            else { return false }
        }
        for tag in [cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag] {
            guard let raw = lcms.cmsReadTag(profile, tag) else { return false }
            let curve = OpaquePointer(raw)
            for step in 0...16 {
                let x = Float(step) / 16
                let y = lcms.cmsEvalToneCurveFloat(curve, x)
                // Within a quarter of an 8-bit level of sRGB's decoding curve.
                guard abs(y - srgbToLinear(x)) < 0.25 / 255 else { return false }
            }
        }
        return true
    }

    /// sRGB's decoding curve (IEC 61966-2-1).
    static func srgbToLinear(_ value: Float) -> Float {
        value <= 0.04045 ? value / 12.92 : powf((value + 0.055) / 1.055, 2.4)
    }

    /// The bytes of `profile` as Little CMS writes it.
    static func bytes(of profile: cmsHPROFILE) -> [UInt8] {
        var size: cmsUInt32Number = 0
        guard lcms.cmsSaveProfileToMem(profile, nil, &size) != 0, size > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        guard bytes.withUnsafeMutableBytes({ lcms.cmsSaveProfileToMem(profile, $0.baseAddress, &size) }) != 0 else {
            return []
        }
        return bytes
    }
}

/// Little CMS's functions, opened with the first profile read (COspreyLibraryLoader.h says why), or stand-ins that make nothing
/// when liblcms2 cannot be opened (``ColorProfiles/unavailability`` says why).
let lcms = osprey_lcms_functions_or_stand_ins().pointee

/// The process's Little CMS context: profiles and transforms made in it may be used from any thread (transforms are
/// made without their one-pixel cache, `cmsFLAGS_NOCACHE`, the only state a transform would change).
// @unchecked Sendable: it owns a C pointer (the context), made once and freed never: it lives as long as the process.
final class LCMSContext: @unchecked Sendable {
    private let handle: cmsContext?

    init() {
        handle = lcms.cmsCreateContext(nil, nil)
        // Errors are reported by the calls that fail (a nil profile or transform); Little CMS's own log is silenced.
        lcms.cmsSetLogErrorHandlerTHR(handle) { _, _, _ in }
    }

    func withHandle<Result>(_ body: (cmsContext?) -> Result) -> Result {
        body(handle)
    }
}
