import FuzzSupport

/// The harness's main (SwiftPM links `main` to `FuzzJXL_main`): libFuzzer feeds inputs to the JPEG XL decoder,
/// libjxl under Osprey's limits.
@_cdecl("FuzzJXL_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .jxl)
        return 0
    }
}
