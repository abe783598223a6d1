import FuzzSupport
@_spi(Fuzzing) import OspreyCodecs

/// The harness's main (SwiftPM links `main` to `FuzzPNG_main`): libFuzzer feeds inputs to the PNG decoder, and checks
/// that the fast path and libpng alone agree on each (differential fuzzing: a disagreement stops the run like a crash).
@_cdecl("FuzzPNG_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .png)
        let bytes = UnsafeRawBufferPointer(start: data, count: count)
        guard ImageFormat(sniffing: bytes) == .png else { return 0 }
        var options = DecodingOptions()
        options.limits.maxPixelCount = 16_000_000
        for allowsPartialImages in [false, true] {
            options.allowsPartialImages = allowsPartialImages
            if !ImageDecoder.pngDecodersAgree(on: bytes, options: options) {
                fatalError("the PNG fast path and libpng disagree (allowsPartialImages: \(allowsPartialImages))")
            }
        }
        return 0
    }
}
