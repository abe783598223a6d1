internal import CFuzzerDriver
public import OspreyCodecs

/// Runs libFuzzer with `argc`/`argv` and `callback` as the input handler; returns libFuzzer's exit status.
public func runFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}

/// Runs one fuzz input through everything that reads untrusted bytes of `format`: header reading, and decoding
/// with default options, at the smallest scale, and with partial images allowed, downscaled, and first frame only. Inputs whose first bytes do
/// not name `format` are skipped, so each harness spends its time on its own decoder.
///
/// Any error is fine; a crash, a leak, a hang or an allocation past the limits is what the fuzzer looks for.
public func fuzzDecoding(_ start: UnsafeRawPointer?, _ count: Int, format: ImageFormat) {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard ImageFormat(sniffing: bytes) == format else { return }
    _ = try? ImageHeader(reading: bytes)
    _ = try? ImageHeader.frames(in: bytes)
    var options = DecodingOptions()
    // Smaller than the default so that the fuzzer's 2 GB RSS limit stays far away: the limit itself is what is tested.
    options.limits.maxPixelCount = 16_000_000
    options.limits.maxFrameCount = 100
    _ = try? ImageDecoder.decode(bytes, options: options)
    var eighth = options
    eighth.targetSize = ImageSize(width: 1, height: 1)  // JPEG at 1/8: the DC-only copy of a file
    _ = try? ImageDecoder.decode(bytes, options: eighth)
    options.allowsPartialImages = true
    options.firstFrameOnly = true
    options.pixelBudget = 10_000
    options.targetSize = ImageSize(width: 50, height: 40)
    _ = try? ImageDecoder.decode(bytes, options: options)
}
