import FuzzSupport

/// libFuzzer's entry point: one input through the WebP decoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    fuzzDecoding(start, count, format: .webp)
    return 0
}
