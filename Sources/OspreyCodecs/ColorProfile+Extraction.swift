internal import COspreyLibraryLoader

// Where each format keeps its colour profile, read from the encoded bytes without decoding: JPEG's APP2
// "ICC_PROFILE" segments (a profile over 64 KiB spans several, numbered), PNG's iCCP chunk (zlib-compressed; an sRGB
// chunk, or gAMA with cHRM, otherwise), WebP's ICCP chunk, AVIF's and HEIC's `colr` box (an ICC profile, or `nclx`
// code points made into one).
extension ColorProfile {
    /// The colour profile the encoded image `data` embeds (its format sniffed from the first bytes), read without
    /// decoding: `nil` when it embeds none (a PNG's sRGB chunk counts as none) or one that cannot be used.
    ///
    /// ```swift
    /// ColorProfile(embeddedIn: jpeg)?.name   // "Display P3"
    /// ```
    public init?(embeddedIn data: some Collection<UInt8>) {
        let read: (UnsafeRawBufferPointer) -> ColorProfile? = { bytes in
            Self.embedded(in: bytes, format: ImageFormat(sniffing: bytes))
        }
        guard
            let profile = data.withContiguousStorageIfAvailable({ read(UnsafeRawBufferPointer($0)) })
                ?? Array(data).withUnsafeBytes(read)
        else { return nil }
        self = profile
    }

    /// Why the colour profile the encoded image `data` embeds cannot be used — its segments incomplete, damaged, over
    /// the size limit, or Little CMS cannot be opened — or `nil` when it embeds a usable one or none. A decoder
    /// ignores such a profile, with ``DecodingWarning/colorProfileIgnored(reason:)``.
    ///
    /// ```swift
    /// if ColorProfile(embeddedIn: jpeg) == nil, let reason = ColorProfile.reasonIgnored(embeddedIn: jpeg) { … }
    /// ```
    public static func reasonIgnored(embeddedIn data: some Collection<UInt8>) -> String? {
        let read: (UnsafeRawBufferPointer) -> String? = { bytes in
            if case .unusable(let reason) = lookup(in: bytes, format: ImageFormat(sniffing: bytes)) {
                reason
            } else {
                nil
            }
        }
        return data.withContiguousStorageIfAvailable({ read(UnsafeRawBufferPointer($0)) })
            ?? Array(data).withUnsafeBytes(read)
    }

    /// The profile `bytes` (an encoded image of `format`) embeds, or `nil` when it embeds none (a PNG's sRGB chunk
    /// counts as none) or one that cannot be used (damaged, truncated, absurd): such an image is decoded as untagged.
    static func embedded(in bytes: UnsafeRawBufferPointer, format: ImageFormat) -> ColorProfile? {
        lookup(in: bytes, format: format).profile
    }

    /// What looking for the profile of an encoded image found.
    enum Lookup {
        case none
        case found(ColorProfile)
        /// There is one, but it cannot be used, for this reason.
        case unusable(String)

        var profile: ColorProfile? {
            if case .found(let profile) = self { profile } else { nil }
        }

        var warnings: [DecodingWarning] {
            if case .unusable(let reason) = self { [.colorProfileIgnored(reason: reason)] } else { [] }
        }
    }

    /// What a decoder with `options` finds: nothing when they ignore profiles, else ``lookup(in:format:)``.
    static func lookup(in bytes: UnsafeRawBufferPointer, format: ImageFormat, options: DecodingOptions) -> Lookup {
        options.colorHandling == .ignore ? .none : lookup(in: bytes, format: format)
    }

    /// The profile `bytes` (an encoded image of `format`) embeds, or why the one it embeds cannot be used.
    static func lookup(in bytes: UnsafeRawBufferPointer, format: ImageFormat) -> Lookup {
        switch format {
        case .jpeg:
            switch jpegProfile(bytes) {
            case .none: return .none
            case .incomplete: return .unusable("its APP2 ICC_PROFILE segments are incomplete or out of order")
            case .bytes(let data): return parsed(data)
            }
        case .png:
            return pngProfile(bytes)
        case .webp:
            return webPProfile(bytes).map(parsed) ?? .none
        case .avif:
            return (try? AVIFDecoder.embeddedColour(bytes)) ?? .none
        case .heic:
            return (try? HEIFDecoder.embeddedColour(bytes)) ?? .none
        default:
            return .none
        }
    }

    /// `data` as a profile, or why it cannot be one.
    private static func parsed(_ data: [UInt8]) -> Lookup {
        if let profile = ColorProfile(data: data) { return .found(profile) }
        if let reason = ColorProfiles.unavailability { return .unusable("Little CMS cannot be opened: \(reason)") }
        if data.count > ColorProfiles.maximumSize {
            return .unusable("it is \(data.count) bytes, over the limit of \(ColorProfiles.maximumSize)")
        }
        return .unusable("it is damaged or not an ICC profile Little CMS can read")
    }

    /// What a JPEG's `APP2 ICC_PROFILE` segments hold.
    enum JPEGProfile {
        case none
        /// A segment missing, repeated or numbered out of range.
        case incomplete
        case bytes([UInt8])
    }

    /// The reassembled payload of a JPEG's `APP2 ICC_PROFILE` segments before the first scan, or whether there are
    /// none or they do not add up (a number missing, repeated, or out of range).
    static func jpegProfile(_ jpeg: UnsafeRawBufferPointer) -> JPEGProfile {
        let signature = Array("ICC_PROFILE".utf8) + [0]
        var chunks: [Int: UnsafeRawBufferPointer] = [:]
        var expectedCount: Int?
        var offset = 2  // after SOI
        while offset + 4 <= jpeg.count {
            guard jpeg[offset] == 0xFF else { break }
            let marker = jpeg[offset + 1]
            if marker == 0xFF {  // fill byte
                offset += 1
                continue
            }
            if marker == 0xDA || marker == 0xD9 { break }  // the profile comes before the first scan
            if (0xD0...0xD7).contains(marker) || marker == 0x01 {
                offset += 2
                continue
            }
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            guard length >= 2, offset + 2 + length <= jpeg.count else { break }
            if marker == 0xE2, length >= 2 + signature.count + 2 {
                let start = offset + 4
                if UnsafeRawBufferPointer(rebasing: jpeg[start..<start + signature.count]).elementsEqual(signature) {
                    let sequence = Int(jpeg[start + signature.count])
                    let count = Int(jpeg[start + signature.count + 1])
                    guard sequence >= 1, sequence <= count, expectedCount == nil || expectedCount == count,
                        chunks[sequence] == nil
                    else { return .incomplete }
                    expectedCount = count
                    chunks[sequence] = UnsafeRawBufferPointer(
                        rebasing: jpeg[(start + signature.count + 2)..<(offset + 2 + length)])
                }
            }
            offset += 2 + length
        }
        guard let count = expectedCount else { return .none }
        guard chunks.count == count else { return .incomplete }
        var profile: [UInt8] = []
        for sequence in 1...count {
            guard let chunk = chunks[sequence] else { return .incomplete }
            profile.append(contentsOf: chunk)
        }
        return .bytes(profile)
    }

    /// A PNG's profile: its iCCP chunk inflated; nothing for an sRGB chunk; a profile made from gAMA and cHRM when
    /// both are there and neither of the others is, unless they describe sRGB (gamma 1/2.2 within 1%, sRGB's white
    /// point and primaries within 0.001), which many encoders write beside or instead of an sRGB chunk and which
    /// libpng and browsers take for sRGB: nothing then, as for an sRGB chunk (a pure power curve there would darken
    /// the shadows by up to 9 levels of 255, 16 → 7, and cost a colour transform per decode).
    static func pngProfile(_ png: UnsafeRawBufferPointer) -> Lookup {
        if let chunk = PNGChunks.first("iCCP", in: png) {
            guard let data = inflatedICCP(chunk) else { return .unusable("its iCCP chunk cannot be inflated") }
            return parsed(data)
        }
        if PNGChunks.contains("sRGB", in: png) { return .none }
        guard let gamma = PNGChunks.first("gAMA", in: png), gamma.count == 4,
            let chromaticities = PNGChunks.first("cHRM", in: png), chromaticities.count == 32
        else { return .none }
        func value(_ chunk: UnsafeRawBufferPointer, _ index: Int) -> Double {
            let raw =
                Int(chunk[index]) << 24 | Int(chunk[index + 1]) << 16 | Int(chunk[index + 2]) << 8
                | Int(chunk[index + 3])
            return Double(raw) / 100_000
        }
        let encodingGamma = value(gamma, 0)
        let xy = (0..<8).map { value(chromaticities, $0 * 4) }
        guard encodingGamma > 0.01, encodingGamma < 10, xy.allSatisfy({ $0 > 0 && $0 < 1 }) else {
            return .unusable("its gAMA and cHRM chunks hold values out of range")
        }
        let sRGB = [0.3127, 0.329, 0.64, 0.33, 0.3, 0.6, 0.15, 0.06]
        if abs(encodingGamma - 0.45455) <= 0.0045, zip(xy, sRGB).allSatisfy({ abs($0 - $1) <= 0.001 }) {
            return .none
        }
        let profile = syntheticProfile(
            white: (xy[0], xy[1]), red: (xy[2], xy[3]), green: (xy[4], xy[5]), blue: (xy[6], xy[7]),
            gamma: 1 / encodingGamma)
        return profile.map(Lookup.found) ?? .unusable("its gAMA and cHRM chunks describe no usable colour space")
    }

    /// The profile in an iCCP chunk's data: a name of 1–79 bytes, a NUL, compression method 0, a zlib stream.
    private static func inflatedICCP(_ chunk: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let nul = chunk.prefix(80).firstIndex(of: 0), nul >= 1, nul + 2 < chunk.count, chunk[nul + 1] == 0
        else { return nil }
        // Up to the largest profile read.
        return Zlib.inflated(UnsafeRawBufferPointer(rebasing: chunk[(nul + 2)...]), limit: ColorProfiles.maximumSize)
    }

    /// A matrix-shaper profile with these chromaticities (CIE xy) and a pure power-law tone curve.
    static func syntheticProfile(
        white: (Double, Double), red: (Double, Double), green: (Double, Double), blue: (Double, Double), gamma: Double
    ) -> ColorProfile? {
        let bytes = ColorProfiles.context.withHandle { context -> [UInt8] in
            var whitePoint = cmsCIExyY(x: white.0, y: white.1, Y: 1)
            var primaries = cmsCIExyYTRIPLE(
                Red: cmsCIExyY(x: red.0, y: red.1, Y: 1), Green: cmsCIExyY(x: green.0, y: green.1, Y: 1),
                Blue: cmsCIExyY(x: blue.0, y: blue.1, Y: 1))
            guard let curve = lcms.cmsBuildGamma(context, gamma) else { return [] }
            defer { lcms.cmsFreeToneCurve(curve) }
            var curves: [OpaquePointer?] = [curve, curve, curve]
            guard let profile = lcms.cmsCreateRGBProfileTHR(context, &whitePoint, &primaries, &curves) else {
                return []
            }
            defer { _ = lcms.cmsCloseProfile(profile) }
            return ColorProfiles.bytes(of: profile)
        }
        return ColorProfile(data: bytes)
    }

    /// The payload of a WebP's ICCP chunk, when it has one (and libwebpdemux can be opened).
    static func webPProfile(_ webp: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let libwebpdemux = try? SharedLibraries.webpDemux else { return nil }
        var data = WebPData(bytes: webp.baseAddress?.assumingMemoryBound(to: UInt8.self), size: webp.count)
        guard let demux = libwebpdemux.demux(&data) else { return nil }
        defer { libwebpdemux.WebPDemuxDelete(demux) }
        guard libwebpdemux.WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS) & ICCP_FLAG.rawValue != 0 else { return nil }
        var chunk = WebPChunkIterator()
        guard libwebpdemux.WebPDemuxGetChunk(demux, "ICCP", 1, &chunk) != 0 else { return nil }
        defer { libwebpdemux.WebPDemuxReleaseChunkIterator(&chunk) }
        return Array(UnsafeRawBufferPointer(start: chunk.chunk.bytes, count: chunk.chunk.size))
    }
}
