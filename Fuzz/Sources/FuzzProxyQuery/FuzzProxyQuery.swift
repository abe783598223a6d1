import FuzzSupport
@_spi(Fuzzing) import OspreyServer

/// The harness's main (SwiftPM links `main` to `FuzzProxyQuery_main`): libFuzzer feeds `/img` queries (and, after a
/// newline, an `Accept` header) to the proxy's parser, signature check and `Accept` reading, which every request
/// reaches before any fetch.
@_cdecl("FuzzProxyQuery_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        let text = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        ProxyFuzzing.checkRequest(query: String(lines[0]), accept: lines.count > 1 ? String(lines[1]) : "")
        return 0
    }
}
