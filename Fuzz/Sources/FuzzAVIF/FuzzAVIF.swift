import FuzzSupport

/// The harness's main (SwiftPM links `main` to `FuzzAVIF_main`): libFuzzer feeds inputs to the AVIF decoder, libavif
/// and dav1d under Osprey's limits.
@_cdecl("FuzzAVIF_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .avif)
        return 0
    }
}
