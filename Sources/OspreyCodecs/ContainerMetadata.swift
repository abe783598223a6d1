internal import COspreyLibraryLoader

/// What an encoder writes beside the pixels: a colour profile, EXIF (a TIFF structure) and XMP (an XML packet), each
/// in the place its format keeps it. The encoders write pixels only; this adds the rest to what they wrote.
struct ContainerMetadata {
    var profile: [UInt8]?
    var exif: [UInt8]?
    var xmp: [UInt8]?

    var isEmpty: Bool { profile == nil && exif == nil && xmp == nil }

    /// `encoded` (a file of `format`) with the metadata added; GIF, which keeps none of it, as it is.
    func adding(to encoded: [UInt8], format: ImageFormat) throws(CodecError) -> [UInt8] {
        guard !isEmpty else { return encoded }
        switch format {
        case .jpeg: return addingToJPEG(encoded)
        case .png: return try addingToPNG(encoded)
        case .webp: return try addingToWebP(encoded)
        default: return encoded
        }
    }

    // MARK: JPEG

    /// The largest payload of one JPEG segment: 65,535 bytes minus the two of the length.
    private static let segmentCapacity = 65_533

    /// APP1 Exif, APP1 XMP and APP2 ICC_PROFILE segments after SOI and the JFIF APP0 segment, where readers look for
    /// them. A profile over one segment is split into numbered ones; EXIF or XMP too large for one segment is left out
    /// (JPEG has no room for it).
    private func addingToJPEG(_ jpeg: [UInt8]) -> [UInt8] {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { return jpeg }
        var insertAt = 2
        if jpeg[2] == 0xFF, jpeg[3] == 0xE0, jpeg.count >= 6 {  // JFIF first, as TurboJPEG writes it
            insertAt = 4 + (Int(jpeg[4]) << 8 | Int(jpeg[5]))
        }
        var segments: [UInt8] = []
        func append(_ marker: UInt8, _ payload: [UInt8]) {
            guard payload.count <= Self.segmentCapacity else { return }
            let length = payload.count + 2
            segments += [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        }
        if let exif { append(0xE1, Array("Exif".utf8) + [0, 0] + exif) }
        if let xmp { append(0xE1, Array("http://ns.adobe.com/xap/1.0/".utf8) + [0] + xmp) }
        if let profile, !profile.isEmpty {
            let signature = Array("ICC_PROFILE".utf8) + [0]
            let chunkSize = Self.segmentCapacity - signature.count - 2
            let count = (profile.count + chunkSize - 1) / chunkSize
            if count <= 255 {
                for index in 0..<count {
                    let chunk = profile[(index * chunkSize)..<min((index + 1) * chunkSize, profile.count)]
                    append(0xE2, signature + [UInt8(index + 1), UInt8(count)] + chunk)
                }
            }
        }
        return Array(jpeg[..<insertAt]) + segments + jpeg[insertAt...]
    }

    // MARK: PNG

    /// iCCP, eXIf and an XMP iTXt chunk after IHDR (before PLTE and IDAT, where they must be).
    private func addingToPNG(_ png: [UInt8]) throws(CodecError) -> [UInt8] {
        let afterHeader = 8 + 25  // signature, IHDR
        guard png.count > afterHeader else { return png }
        var chunks: [UInt8] = []
        if let profile, !profile.isEmpty {
            chunks += Self.pngChunk("iCCP", Array("ICC profile".utf8) + [0, 0] + (try Self.zlib(profile)))
        }
        if let exif { chunks += Self.pngChunk("eXIf", exif) }
        if let xmp {
            chunks += Self.pngChunk("iTXt", Array("XML:com.adobe.xmp".utf8) + [0, 0, 0, 0, 0] + xmp)
        }
        return Array(png[..<afterHeader]) + chunks + png[afterHeader...]
    }

    static func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeAndData = Array(type.utf8) + data
        let crc = CRC32.checksum(typeAndData)
        return bigEndian(UInt32(data.count)) + typeAndData + bigEndian(crc)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// `data` as a zlib stream (libdeflate, level 9: profiles are small and written once).
    private static func zlib(_ data: [UInt8]) throws(CodecError) -> [UInt8] {
        let libdeflate = try SharedLibraries.deflate
        guard let compressor = libdeflate.libdeflate_alloc_compressor(9) else {
            throw .encodingFailed(format: .png, reason: "out of memory compressing the colour profile")
        }
        defer { libdeflate.libdeflate_free_compressor(compressor) }
        let bound = libdeflate.libdeflate_zlib_compress_bound(compressor, data.count)
        var output = [UInt8](repeating: 0, count: bound)
        let written = data.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                libdeflate.libdeflate_zlib_compress(
                    compressor, source.baseAddress, source.count, target.baseAddress, bound)
            }
        }
        guard written > 0 else { throw .encodingFailed(format: .png, reason: "cannot compress the colour profile") }
        return Array(output.prefix(written))
    }

    // MARK: WebP

    /// ICCP, EXIF and XMP chunks through libwebp's muxer, which also writes the extended header (VP8X) that says so.
    private func addingToWebP(_ webp: [UInt8]) throws(CodecError) -> [UInt8] {
        try webp.withUnsafeBytes { bytes in Result { () throws(CodecError) in try muxing(bytes) } }.get()
    }

    private func muxing(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> [UInt8] {
        let (libwebp, libwebpmux) = (try SharedLibraries.webp, try SharedLibraries.webpMux)
        var data = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
        guard let mux = libwebpmux.WebPMuxCreateInternal(&data, 0, WEBP_MUX_ABI_VERSION) else {
            throw .encodingFailed(format: .webp, reason: "cannot reopen the encoded image to add metadata")
        }
        defer { libwebpmux.WebPMuxDelete(mux) }
        for (fourCC, payload) in [("ICCP", profile), ("EXIF", exif), ("XMP ", xmp)] {
            guard let payload, !payload.isEmpty else { continue }
            let status = payload.withUnsafeBytes { raw -> WebPMuxError in
                var chunk = WebPData(bytes: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), size: raw.count)
                return libwebpmux.WebPMuxSetChunk(mux, fourCC, &chunk, 1)
            }
            guard status == WEBP_MUX_OK else {
                throw .encodingFailed(format: .webp, reason: "cannot add the \(fourCC) chunk")
            }
        }
        var assembled = WebPData()
        guard libwebpmux.WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK, let start = assembled.bytes else {
            throw .encodingFailed(format: .webp, reason: "cannot write the image with its metadata")
        }
        defer { libwebp.WebPFree(UnsafeMutableRawPointer(mutating: start)) }
        return Array(UnsafeBufferPointer(start: start, count: assembled.size))
    }
}
