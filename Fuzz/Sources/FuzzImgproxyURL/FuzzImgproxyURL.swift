import FuzzSupport
@_spi(Fuzzing) import OspreyServer

/// The harness's main (SwiftPM links `main` to `FuzzImgproxyURL_main`): libFuzzer feeds paths to the imgproxy URL
/// parser and its signature check, which every imgproxy request reaches before any fetch.
@_cdecl("FuzzImgproxyURL_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        ProxyFuzzing.checkImgproxy(
            path: String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self))
        return 0
    }
}
