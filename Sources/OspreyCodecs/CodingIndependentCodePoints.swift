internal import COspreyLibraryLoader

/// Colours described by code points (ITU-T H.273, the `nclx` box of AVIF and HEIF) rather than an ICC profile: the
/// primaries and the transfer characteristics, turned into a matrix-shaper profile for the colour stage.
enum CodingIndependentCodePoints {
    /// The profile for `primaries` and `transfer` (H.273 code points); `.none` for sRGB's own colours (BT.709
    /// primaries with the sRGB curve, or either unspecified), which need no conversion.
    static func profile(primaries: Int, transfer: Int) -> ColorProfile.Lookup {
        let primaries = primaries == 2 ? 1 : primaries  // unspecified: BT.709, as sRGB
        let transfer = transfer == 2 ? 13 : transfer  // unspecified: the sRGB curve
        if primaries == 1, transfer == 13 { return .none }
        guard let chromaticities = Self.chromaticities[primaries] else {
            return .unusable("its colour primaries (\(primaries) in H.273) are not ones Osprey knows")
        }
        let curve: Curve
        switch transfer {
        case 13: curve = .parametric(type: 4, [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045])
        // BT.709's camera curve (also BT.601's and BT.2020's), inverted: V = 1.099 L^0.45 − 0.099 above 0.018.
        case 1, 6, 14, 15: curve = .parametric(type: 4, [1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081])
        case 4: curve = .parametric(type: 1, [2.2])
        case 5: curve = .parametric(type: 1, [2.8])
        case 8: curve = .parametric(type: 1, [1])
        case 16, 18:
            let name = transfer == 16 ? "PQ" : "HLG"
            // No matrix-shaper profile can say this: decoders tone-map it themselves (HDRToneMapping).
            return .unusable("its HDR transfer (\(name)) is for the decoder to tone-map, not for a profile")
        default:
            return .unusable("its transfer characteristics (\(transfer) in H.273) are not ones Osprey knows")
        }
        let made = ColorProfiles.context.withHandle { context -> [UInt8] in
            let (white, red, green, blue) = chromaticities
            var whitePoint = cmsCIExyY(x: white.0, y: white.1, Y: 1)
            var triple = cmsCIExyYTRIPLE(
                Red: cmsCIExyY(x: red.0, y: red.1, Y: 1), Green: cmsCIExyY(x: green.0, y: green.1, Y: 1),
                Blue: cmsCIExyY(x: blue.0, y: blue.1, Y: 1))
            guard case .parametric(let type, let parameters) = curve,
                let tone = lcms.cmsBuildParametricToneCurve(context, Int32(type), parameters)
            else { return [] }
            defer { lcms.cmsFreeToneCurve(tone) }
            var curves: [OpaquePointer?] = [tone, tone, tone]
            guard let profile = lcms.cmsCreateRGBProfileTHR(context, &whitePoint, &triple, &curves) else { return [] }
            defer { _ = lcms.cmsCloseProfile(profile) }
            return ColorProfiles.bytes(of: profile)
        }
        guard let profile = ColorProfile(data: made) else {
            return .unusable("its colour code points (\(primaries), \(transfer)) make no usable profile")
        }
        return .found(profile)
    }

    /// A tone curve as Little CMS's parametric curves take it.
    enum Curve {
        case parametric(type: Int, [Double])
    }

    typealias XY = (Double, Double)

    /// White, red, green and blue (CIE 1931 xy) of the H.273 colour primaries Osprey converts from.
    static let chromaticities: [Int: (XY, XY, XY, XY)] = [
        1: ((0.3127, 0.3290), (0.640, 0.330), (0.300, 0.600), (0.150, 0.060)),  // BT.709, sRGB
        4: ((0.310, 0.316), (0.67, 0.33), (0.21, 0.71), (0.14, 0.08)),  // BT.470 System M, illuminant C
        5: ((0.3127, 0.3290), (0.64, 0.33), (0.29, 0.60), (0.15, 0.06)),  // BT.470 System B/G, BT.601 625
        6: ((0.3127, 0.3290), (0.630, 0.340), (0.310, 0.595), (0.155, 0.070)),  // BT.601 525, SMPTE 170M
        7: ((0.3127, 0.3290), (0.630, 0.340), (0.310, 0.595), (0.155, 0.070)),  // SMPTE 240M
        9: ((0.3127, 0.3290), (0.708, 0.292), (0.170, 0.797), (0.131, 0.046)),  // BT.2020, BT.2100
        11: ((0.314, 0.351), (0.680, 0.320), (0.265, 0.690), (0.150, 0.060)),  // DCI-P3 (SMPTE RP 431-2)
        12: ((0.3127, 0.3290), (0.680, 0.320), (0.265, 0.690), (0.150, 0.060)),  // Display P3 (SMPTE EG 432-1)
        22: ((0.3127, 0.3290), (0.630, 0.340), (0.295, 0.605), (0.155, 0.077)),  // EBU Tech 3213-E
    ]
}
