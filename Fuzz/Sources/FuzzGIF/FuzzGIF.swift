import FuzzSupport

/// The harness's main (SwiftPM links `main` to `FuzzGIF_main`): libFuzzer feeds inputs to the GIF decoder.
@_cdecl("FuzzGIF_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        fuzzDecoding(data, count, format: .gif)
        return 0
    }
}
