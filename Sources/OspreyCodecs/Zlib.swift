internal import COspreyLibraryLoader

/// Inflating the small zlib streams image containers carry (a PNG's `iCCP` profile, a compressed XMP `iTXt`) with
/// libdeflate, which inflates a whole buffer in one call.
enum Zlib {
    /// `stream` inflated, or `nil` when it is damaged, inflates to more than `limit` bytes or libdeflate cannot be
    /// opened. The output buffer starts at 64 KiB (these payloads are rarely over a few kilobytes) and grows fourfold
    /// while the stream does not fit.
    static func inflated(_ stream: UnsafeRawBufferPointer, limit: Int) -> [UInt8]? {
        guard let libdeflate = try? SharedLibraries.deflate,
            let decompressor = libdeflate.libdeflate_alloc_decompressor()
        else { return nil }
        defer { libdeflate.libdeflate_free_decompressor(decompressor) }
        var capacity = 64 << 10
        while capacity <= limit {
            var output = [UInt8](repeating: 0, count: capacity)
            var produced = 0
            let result = output.withUnsafeMutableBytes { target in
                libdeflate.libdeflate_zlib_decompress(
                    decompressor, stream.baseAddress, stream.count, target.baseAddress, capacity, &produced)
            }
            switch result {
            case LIBDEFLATE_SUCCESS: return Array(output.prefix(produced))
            case LIBDEFLATE_INSUFFICIENT_SPACE: capacity *= 4
            default: return nil
            }
        }
        return nil
    }
}
