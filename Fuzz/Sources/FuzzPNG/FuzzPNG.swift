import FuzzSupport

/// The harness's main (SwiftPM links `main` to `FuzzPNG_main`): libFuzzer feeds inputs to the PNG decoder.
@_cdecl("FuzzPNG_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .png)
        return 0
    }
}
