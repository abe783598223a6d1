import FuzzSupport
import OspreyCodecs

/// The harness's main (SwiftPM links `main` to `FuzzJXL_main`): libFuzzer feeds inputs to the JPEG XL decoder,
/// libjxl under Osprey's limits, and its JPEG reconstruction.
@_cdecl("FuzzJXL_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .jxl)
        // The JPEG a recompressed file holds, rebuilt from its coefficients.
        var limits = DecodingOptions.Limits()
        limits.maxPixelCount = 16_000_000
        _ = try? JXLCoder.reconstructedJPEG(from: UnsafeRawBufferPointer(start: data, count: count), limits: limits)
        return 0
    }
}
