import FuzzSupport

/// The harness's main (SwiftPM links `main` to `FuzzWebP_main`): libFuzzer feeds inputs to the WebP decoder.
@_cdecl("FuzzWebP_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .webp)
        return 0
    }
}
