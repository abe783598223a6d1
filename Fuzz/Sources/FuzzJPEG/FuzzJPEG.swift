import FuzzSupport

/// The harness's main (SwiftPM links `main` to `FuzzJPEG_main`): libFuzzer feeds inputs to the JPEG decoder.
@_cdecl("FuzzJPEG_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .jpeg)
        return 0
    }
}
