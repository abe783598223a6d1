internal import COspreyLibraryLoader

// A JPEG XL recompressed from a JPEG gives the JPEG back, byte for byte (libjxl's JPEG reconstruction).
extension JXLCoder {
    /// Whether `data` is a JPEG XL container carrying JPEG reconstruction data (a `jbrd` box: the file was
    /// recompressed losslessly from a JPEG, as cjxl does by default with JPEG input). Reads the boxes only.
    public static func containsJPEGReconstruction(_ data: UnsafeRawBufferPointer) -> Bool {
        var boxes = BoxReader(bytes: data, range: 0..<data.count)
        // The signature box "JXL ", then any box "jbrd".
        guard let signature = try? boxes.next(format: .jxl), signature.type == 0x4A58_4C20 else { return false }
        while let box = try? boxes.next(format: .jxl) {
            if box.type == 0x6A62_7264 { return true }
        }
        return false
    }

    /// The JPEG file `data` was recompressed from, byte for byte, when `data` carries the reconstruction data
    /// (``containsJPEGReconstruction(_:)``); `nil` when it does not. libjxl rebuilds it from the coefficients without
    /// decoding a pixel. The output is bounded by the decoder memory limit of `limits`.
    public static func reconstructedJPEG(
        from data: UnsafeRawBufferPointer, limits: DecodingOptions.Limits = DecodingOptions.Limits()
    ) throws(CodecError) -> [UInt8]? {
        try reconstructedJPEG(from: data, limits: limits, capacity: max(data.count + data.count / 2, 1 << 16))
    }

    /// ``reconstructedJPEG(from:limits:)`` into a buffer of `capacity` bytes at first, doubled as libjxl asks.
    static func reconstructedJPEG(
        from data: UnsafeRawBufferPointer, limits: DecodingOptions.Limits, capacity: Int
    ) throws(CodecError) -> [UInt8]? {
        guard containsJPEGReconstruction(data) else { return nil }
        let jxl = try SharedLibraries.jxl
        let events = JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_JPEG_RECONSTRUCTION.rawValue | JXL_DEC_FULL_IMAGE.rawValue
        return try JXLDecoder.withDecoder(data, events: Int32(events)) { decoder throws(CodecError) -> [UInt8]? in
            // Recompression saves about a fifth, so the JPEG is a little larger than its JPEG XL. libjxl writes into
            // the buffer between calls, so it is memory of our own, not an array's storage.
            var output = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 16)
            defer { output.deallocate() }
            var isReconstructing = false
            func give(from offset: Int) throws(CodecError) {
                let set = jxl.JxlDecoderSetJPEGBuffer(
                    decoder, output.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset, output.count - offset)
                guard set == JXL_DEC_SUCCESS else {
                    throw .malformed(format: .jxl, reason: "libjxl refused the buffer")
                }
            }
            while true {
                let status = jxl.JxlDecoderProcessInput(decoder)
                switch status {
                case JXL_DEC_BASIC_INFO:
                    var info = JxlBasicInfo()
                    guard jxl.JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                        throw .malformed(format: .jxl, reason: "its header cannot be read")
                    }
                    let (width, height) = (Int(info.xsize), Int(info.ysize))
                    guard ImageDecoder.saturating(width, height) <= limits.maxPixelCount else {
                        throw .tooManyPixels(width: width, height: height, limit: limits.maxPixelCount)
                    }
                case JXL_DEC_JPEG_RECONSTRUCTION:
                    isReconstructing = true
                    try give(from: 0)
                case JXL_DEC_JPEG_NEED_MORE_OUTPUT:
                    // Full: what was given ends where the buffer ends, so the bytes written are all but those left.
                    let written = output.count - jxl.JxlDecoderReleaseJPEGBuffer(decoder)
                    guard output.count * 2 <= limits.maxDecoderMemory else {
                        throw .limitExceeded(
                            format: .jxl, reason: "the reconstructed JPEG exceeds \(limits.maxDecoderMemory) bytes")
                    }
                    let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: output.count * 2, alignment: 16)
                    larger.copyMemory(from: UnsafeRawBufferPointer(rebasing: output[..<written]))
                    output.deallocate()
                    output = larger
                    try give(from: written)
                case JXL_DEC_FULL_IMAGE, JXL_DEC_SUCCESS:
                    guard isReconstructing else { return nil }
                    let written = output.count - jxl.JxlDecoderReleaseJPEGBuffer(decoder)
                    return Array(output[..<written])
                case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                    // Asked for pixels: libjxl found no JPEG to rebuild after all.
                    return nil
                default:
                    throw JXLDecoder.failure(status)
                }
            }
        }
    }
}
