import FuzzSupport

/// libFuzzer's entry point: one input through the PNG decoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    fuzzDecoding(start, count, format: .png)
    return 0
}
