import FuzzSupport
@_spi(Fuzzing) import OspreyServer

/// The harness's main (SwiftPM links `main` to `FuzzThumborURL_main`): libFuzzer feeds paths to the thumbor URL parser,
/// its filter parser and its signature check, which every thumbor request reaches before any fetch.
@_cdecl("FuzzThumborURL_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        ProxyFuzzing.checkThumbor(
            path: String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self))
        return 0
    }
}
