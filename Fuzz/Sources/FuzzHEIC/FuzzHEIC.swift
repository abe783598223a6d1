import FuzzSupport

/// The harness's main (SwiftPM links `main` to `FuzzHEIC_main`): libFuzzer feeds inputs to the HEIC decoder,
/// Osprey's structure checks and then libheif and libde265 under Osprey's limits.
@_cdecl("FuzzHEIC_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .heic)
        return 0
    }
}
