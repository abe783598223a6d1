internal import COspreyLibraryLoader

/// HEIC and HEIF stills through libheif (libde265 decodes the HEVC payload), decode only: the primary image, alpha,
/// grids, the container's transforms (`clap`, `irot`, `imir`: applied by libheif, so the image is upright and an
/// EXIF orientation inside the file is not applied again), 8 to 12 bits (converted to 8), colours from the ICC
/// profile or `nclx` through the colour stage, PQ and HLG tone-mapped to sRGB.
///
/// Before libheif reads a byte, Osprey reads the item structure itself (`HEIFStructure`: boxes inside their
/// parents, bounded item and reference counts, no derived image deriving from itself) and checks the primary image's
/// declared size against the pixel limits: libheif 1.15 has no limits of its own. AVIF files never reach libheif.
public struct HEIFCoder: ImageDecoding {
    /// Makes the coder; it holds no state.
    public init() {}
    /// The format it reads (and writes, if it does).
    public var format: ImageFormat { .heic }
    /// The bytes it needs to recognise a file: the ISO base media file's `ftyp` box, with its brands.
    public var signatureLength: Int { FileTypeBox.recognitionLength }

    /// An `ftyp` box naming HEVC-based HEIF (`heic`, `heix`, `mif1` with such a brand ...), and not AVIF.
    public func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool {
        FileTypeBox(prefix)?.isHEIC ?? false
    }

    /// The primary image's displayed size (libheif's, after `clap` and `irot`); nothing is decoded.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        let heif = try SharedLibraries.heif
        return try HEIFDecoder.withPrimaryImage(data, options: DecodingOptions()) { handle throws(CodecError) in
            var header = ImageHeader(
                format: .heic, width: Int(heif.heif_image_handle_get_width(handle)),
                height: Int(heif.heif_image_handle_get_height(handle)))
            header.hasAlpha = heif.heif_image_handle_has_alpha_channel(handle) != 0
            let bits = Int(heif.heif_image_handle_get_luma_bits_per_pixel(handle))
            if bits > 0 { header.bitDepth = bits }
            return header
        }
    }

    /// The memory decoding `data` as `options` ask takes, from its header: what a budget reserves first.
    public func memoryEstimate(
        _ data: UnsafeRawBufferPointer, options: DecodingOptions
    ) throws(CodecError) -> DecodingEstimate {
        let heif = try SharedLibraries.heif
        return try HEIFDecoder.withPrimaryImage(data, options: options) { handle throws(CodecError) in
            let (width, height) = (
                Int(heif.heif_image_handle_get_width(handle)), Int(heif.heif_image_handle_get_height(handle))
            )
            let channels = heif.heif_image_handle_has_alpha_channel(handle) != 0 ? 4 : 3
            let imageBytes = ImageDecoder.saturating(width, height, channels)
            // libheif's own planes (YUV at up to 16 bits) and its interleaved RGB, beside ours.
            let working = ImageDecoder.saturating(width, height, 8 + channels * 2)
            return DecodingEstimate(
                width: width, height: height, channels: channels, frameCount: 1, imageBytes: imageBytes,
                peakBytes: ImageDecoder.saturating(sum: imageBytes, working))
        }
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        try HEIFDecoder.decode(data, options: options)
    }
}

extension ImageFormat {
    /// HEIC: HEVC images in an ISO base media file (HEIF), as phones take photos. Read, not written.
    public static let heic = ImageFormat(name: "heic", mimeType: "image/heic", fileExtension: "heic")
}

extension FileTypeBox {
    /// Whether this is a HEIF file for libheif: a HEIF major brand, or a neutral one (`mif1`, `msf1`) with no AVIF
    /// brand (its items' codecs are checked before decoding); never an AVIF file.
    var isHEIC: Bool {
        if isAVIF { return false }
        return Self.heifBrands.contains(major) || [Self.brand("mif1"), Self.brand("msf1")].contains(major)
    }
}

enum HEIFDecoder {
    /// Runs `body` on the primary image of `bytes`, read by libheif after Osprey's own checks.
    static func withPrimaryImage<Result>(
        _ bytes: UnsafeRawBufferPointer, options: DecodingOptions,
        _ body: (OpaquePointer) throws(CodecError) -> Result
    ) throws(CodecError) -> Result {
        let heif = try SharedLibraries.heif
        guard let base = bytes.baseAddress, !bytes.isEmpty else { throw .truncated(format: .heic) }
        guard let box = FileTypeBox(bytes), box.isHEIC else {
            throw .malformed(format: .heic, reason: "it is not an HEVC-based HEIF file")
        }
        let structure = try HEIFStructure(bytes, format: .heic)
        // A neutral brand can hide an AV1 image, which must not reach libheif: libavif reads those, when branded.
        if structure.items.values.contains(where: { $0.type == FileTypeBox.brand("av01") }) {
            throw .malformed(format: .heic, reason: "it holds an AV1 image without declaring the avif brand")
        }
        let limits = options.limits
        let pixelLimit = min(limits.maxPixelCount, limits.maxSourcePixelCount ?? .max)
        // Every image item, the primary's tiles and thumbnails included, within the pixel limits.
        for item in structure.items.values where item.width > 0 {
            guard ImageDecoder.saturating(item.width, item.height) <= pixelLimit else {
                throw .tooManyPixels(width: item.width, height: item.height, limit: pixelLimit)
            }
        }
        guard let context = heif.heif_context_alloc() else { throw .outOfMemory(byteCount: 1 << 16) }
        defer { heif.heif_context_free(context) }
        // libheif's one limit: the longest side it accepts.
        heif.heif_context_set_maximum_image_size_limit(context, Int32(clamping: min(pixelLimit, 1 << 20)))
        try check(heif.heif_context_read_from_memory_without_copy(context, base, bytes.count, nil))
        var handle: OpaquePointer?
        try check(heif.heif_context_get_primary_image_handle(context, &handle))
        guard let handle else { throw .malformed(format: .heic, reason: "it has no primary image") }
        defer { heif.heif_image_handle_release(handle) }
        let (width, height) = (
            Int(heif.heif_image_handle_get_width(handle)), Int(heif.heif_image_handle_get_height(handle))
        )
        guard width > 0, height > 0 else { throw .invalidDimensions(width: width, height: height) }
        guard ImageDecoder.saturating(width, height) <= pixelLimit else {
            throw .tooManyPixels(width: width, height: height, limit: pixelLimit)
        }
        return try body(handle)
    }

    /// Throws the ``CodecError`` for a libheif error other than success, with libheif's message.
    static func check(_ error: heif_error) throws(CodecError) {
        guard error.code != heif_error_Ok else { return }
        let message = error.message.map { String(cString: $0) } ?? "error \(error.code.rawValue)"
        switch error.code {
        case heif_error_Memory_allocation_error: throw .limitExceeded(format: .heic, reason: message)
        case heif_error_Unsupported_filetype, heif_error_Unsupported_feature:
            throw .malformed(format: .heic, reason: "libheif cannot decode it: \(message)")
        default:
            if error.subcode == heif_suberror_Security_limit_exceeded {
                throw .limitExceeded(format: .heic, reason: message)
            }
            throw .malformed(format: .heic, reason: message)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        let heif = try SharedLibraries.heif
        return try withPrimaryImage(bytes, options: options) { handle throws(CodecError) -> Image in
            let alpha = heif.heif_image_handle_has_alpha_channel(handle) != 0
            let colour = colourDescription(of: handle, options: options, heif: heif)
            let pixels: PixelBuffer
            if let transfer = colour.toneMapping {
                pixels = try decodeToneMapped(handle, alpha: alpha, transfer: transfer, primaries: colour.primaries)
            } else {
                pixels = try decodeEightBit(handle, alpha: alpha)
            }
            var image = Image(pixels: pixels, orientation: .up, sourceFormat: .heic)
            image.colorProfile = colour.profile
            image.warnings = colour.warnings
            if options.readsMetadata { image.metadata = metadata(of: handle, heif: heif) }
            return image
        }
    }

    /// The EXIF (from the TIFF header on: the item's first four bytes give its offset) and XMP (a `mime` item of type
    /// `application/rdf+xml`) attached to the primary image; at most one of each, 1 MiB each at most.
    static func metadata(of handle: OpaquePointer, heif: osprey_heif_functions) -> ImageMetadata {
        var metadata = ImageMetadata()
        let count = Int(heif.heif_image_handle_get_number_of_metadata_blocks(handle, nil))
        guard count > 0, count <= 64 else { return metadata }
        var ids = [heif_item_id](repeating: 0, count: count)
        let listed = Int(heif.heif_image_handle_get_list_of_metadata_block_IDs(handle, nil, &ids, Int32(count)))
        for id in ids.prefix(listed) {
            let size = heif.heif_image_handle_get_metadata_size(handle, id)
            guard size > 0, size <= 1 << 20 else { continue }
            var data = [UInt8](repeating: 0, count: size)
            guard
                data.withUnsafeMutableBytes({ heif.heif_image_handle_get_metadata(handle, id, $0.baseAddress) }).code
                    == heif_error_Ok
            else { continue }
            let type = heif.heif_image_handle_get_metadata_type(handle, id).map { String(cString: $0) } ?? ""
            let contentType =
                heif.heif_image_handle_get_metadata_content_type(handle, id).map { String(cString: $0) } ?? ""
            if type == "Exif", metadata.exif == nil, data.count > 4 {
                let offset = Int(data[0]) << 24 | Int(data[1]) << 16 | Int(data[2]) << 8 | Int(data[3])
                if offset < data.count - 4 { metadata.exif = Array(data[(4 + offset)...]) }
            } else if type == "mime", contentType == "application/rdf+xml", metadata.xmp == nil {
                metadata.xmp = data
            }
        }
        return metadata
    }

    /// The primary image as 8-bit RGB or RGBA, converted by libheif (YUV to RGB, higher depths down to 8).
    private static func decodeEightBit(_ handle: OpaquePointer, alpha: Bool) throws(CodecError) -> PixelBuffer {
        try withDecodedImage(handle, chroma: alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB) {
            image throws(CodecError) in
            try copyPlane(image, format: alpha ? .rgba8 : .rgb8)
        }
    }

    /// The primary image at 16 bits, tone-mapped to 8-bit sRGB from its HDR transfer.
    private static func decodeToneMapped(
        _ handle: OpaquePointer, alpha: Bool, transfer: HDRToneMapping.Transfer, primaries: Int
    ) throws(CodecError) -> PixelBuffer {
        let heif = try SharedLibraries.heif
        let chroma = alpha ? heif_chroma_interleaved_RRGGBBAA_LE : heif_chroma_interleaved_RRGGBB_LE
        return try withDecodedImage(handle, chroma: chroma) { image throws(CodecError) in
            let channels = alpha ? 4 : 3
            let width = Int(heif.heif_image_get_width(image, heif_channel_interleaved))
            let height = Int(heif.heif_image_get_height(image, heif_channel_interleaved))
            let bits = Int(heif.heif_image_get_bits_per_pixel_range(image, heif_channel_interleaved))
            var stride: Int32 = 0
            guard let plane = heif.heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride), width > 0,
                height > 0, bits > 0, bits <= 16
            else { throw .malformed(format: .heic, reason: "libheif gave no pixels") }
            // libheif keeps the coded depth in 16-bit samples: widen it to the full 16-bit range.
            var samples = [UInt16](repeating: 0, count: width * height * channels)
            // Bit replication: the top bits repeated below, so that the largest code becomes 65,535.
            let (shift, replicate) = (16 - bits, 2 * bits - 16)
            for y in 0..<height {
                let row = UnsafeRawPointer(plane + y * Int(stride))
                for index in 0..<(width * channels) {
                    let value = row.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self)
                    samples[y * width * channels + index] = value << shift | (replicate >= 0 ? value >> replicate : 0)
                }
            }
            return try samples.withUnsafeBufferPointer { buffer throws(CodecError) in
                try HDRToneMapping.sRGB(
                    from: buffer, width: width, height: height, rowLength: width * channels,
                    format: alpha ? .rgba8 : .rgb8, transfer: transfer, primaries: primaries)
            }
        }
    }

    private static func withDecodedImage<Result>(
        _ handle: OpaquePointer, chroma: heif_chroma, _ body: (OpaquePointer) throws(CodecError) -> Result
    ) throws(CodecError) -> Result {
        let heif = try SharedLibraries.heif
        guard let decoding = heif.heif_decoding_options_alloc() else { throw .outOfMemory(byteCount: 1 << 10) }
        defer { heif.heif_decoding_options_free(decoding) }
        decoding.pointee.convert_hdr_to_8bit =
            chroma == heif_chroma_interleaved_RGB
                || chroma == heif_chroma_interleaved_RGBA ? 1 : 0
        var image: OpaquePointer?
        try check(heif.heif_decode_image(handle, &image, heif_colorspace_RGB, chroma, decoding))
        guard let image else { throw .malformed(format: .heic, reason: "libheif decoded no image") }
        defer { heif.heif_image_release(image) }
        return try body(image)
    }

    /// The interleaved plane of `image` copied row by row into a buffer of `format`.
    private static func copyPlane(_ image: OpaquePointer, format: PixelFormat) throws(CodecError) -> PixelBuffer {
        let heif = try SharedLibraries.heif
        let width = Int(heif.heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif.heif_image_get_height(image, heif_channel_interleaved))
        var stride: Int32 = 0
        guard let plane = heif.heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride), width > 0,
            height > 0, Int(stride) >= width * format.bytesPerPixel
        else { throw .malformed(format: .heic, reason: "libheif gave no pixels") }
        var pixels = try PixelBuffer(width: width, height: height, format: format)
        let rowBytes = width * format.bytesPerPixel
        let destinationStride = pixels.bytesPerRow
        pixels.withUnsafeMutableBytes { destination in
            for y in 0..<height {
                (destination.baseAddress! + y * destinationStride).copyMemory(
                    from: plane + y * Int(stride), byteCount: rowBytes)
            }
        }
        return pixels
    }

    /// The colours the file declares, read without decoding: its ICC profile, else a profile from its `nclx`.
    static func embeddedColour(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ColorProfile.Lookup {
        let heif = try SharedLibraries.heif
        return try withPrimaryImage(bytes, options: DecodingOptions()) { handle throws(CodecError) in
            let colour = colourDescription(of: handle, options: DecodingOptions(), heif: heif)
            if let profile = colour.profile { return .found(profile) }
            if let warning = colour.warnings.first, case .colorProfileIgnored(let reason) = warning {
                return .unusable(reason)
            }
            return .none
        }
    }

    /// The ICC profile, else the `nclx` colours: a profile for the colour stage, or an HDR transfer to tone-map.
    private static func colourDescription(
        of handle: OpaquePointer, options: DecodingOptions, heif: osprey_heif_functions
    ) -> (profile: ColorProfile?, warnings: [DecodingWarning], toneMapping: HDRToneMapping.Transfer?, primaries: Int) {
        guard options.colorHandling != .ignore else { return (nil, [], nil, 1) }
        let size = heif.heif_image_handle_get_raw_color_profile_size(handle)
        if size > 0, size <= ColorProfiles.maximumSize {
            var data = [UInt8](repeating: 0, count: size)
            let error = data.withUnsafeMutableBytes {
                heif.heif_image_handle_get_raw_color_profile(handle, $0.baseAddress)
            }
            if error.code == heif_error_Ok, let profile = ColorProfile(data: data) { return (profile, [], nil, 1) }
            return (
                nil, [.colorProfileIgnored(reason: "its ICC profile is damaged or not one Little CMS can read")], nil, 1
            )
        }
        var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
        let read = heif.heif_image_handle_get_nclx_color_profile(handle, &nclx)
        // libheif allocates the profile before it checks the code points, and returns it with the error: freed
        // either way (a leak the HEIC fuzzer found: Fuzz/Regressions/heic).
        defer { if let nclx { heif.heif_nclx_color_profile_free(nclx) } }
        guard read.code == heif_error_Ok, let nclx else { return (nil, [], nil, 1) }
        let primaries = Int(nclx.pointee.color_primaries.rawValue)
        let transfer = Int(nclx.pointee.transfer_characteristics.rawValue)
        if let hdr = HDRToneMapping.Transfer(codePoint: transfer) { return (nil, [], hdr, primaries) }
        switch CodingIndependentCodePoints.profile(primaries: primaries, transfer: transfer) {
        case .none: return (nil, [], nil, primaries)
        case .found(let profile): return (profile, [], nil, primaries)
        case .unusable(let reason): return (nil, [.colorProfileIgnored(reason: reason)], nil, primaries)
        }
    }
}
