internal import COspreyLibraryLoader

/// What an image file says about itself beside its pixels and colour profile: EXIF and XMP, as the file held them.
///
/// Decoders read them onto ``Image/metadata``; encoders write none of it unless ``EncodingOptions/metadata`` asks
/// (so a photo's GPS position never leaks by default).
public struct ImageMetadata: Sendable, Hashable {
    /// The EXIF data: a TIFF structure (what follows `Exif\0\0` in a JPEG), with the orientation the file stated.
    public var exif: [UInt8]?
    /// The XMP packet: UTF-8 XML.
    public var xmp: [UInt8]?

    /// Makes metadata; none by default.
    public init(exif: [UInt8]? = nil, xmp: [UInt8]? = nil) {
        self.exif = exif
        self.xmp = xmp
    }

    /// Whether there is none.
    public var isEmpty: Bool { exif == nil && xmp == nil }

    /// What an encoder keeps of an image's metadata (``EncodingOptions/metadata``).
    public enum Policy: String, Sendable, Hashable, CaseIterable {
        /// Nothing: no EXIF, no XMP. The default.
        case strip
        /// Only who made the image and who holds its rights: EXIF `Artist` and `Copyright`, XMP `dc:creator` and
        /// `dc:rights`.
        case copyright
        /// Everything, with the orientation set to 1 (an encoder writes upright pixels), GPS included.
        case all
    }

    /// What `policy` keeps of this metadata.
    public func kept(by policy: Policy) -> ImageMetadata {
        switch policy {
        case .strip:
            return ImageMetadata()
        case .copyright:
            return ImageMetadata(
                exif: exif.flatMap(EXIF.copyrightOnly), xmp: xmp.flatMap(XMP.copyrightOnly))
        case .all:
            return ImageMetadata(exif: exif.map(EXIF.withOrientationReset), xmp: xmp.map(XMP.withOrientationReset))
        }
    }

    // MARK: Reading

    /// The EXIF and XMP the encoded image `data` carries (its format sniffed from the first bytes), read without
    /// decoding.
    public init(embeddedIn data: some Collection<UInt8>) {
        let read: (UnsafeRawBufferPointer) -> ImageMetadata = { bytes in
            Self.embedded(in: bytes, format: ImageFormat(sniffing: bytes))
        }
        self =
            data.withContiguousStorageIfAvailable { read(UnsafeRawBufferPointer($0)) }
            ?? Array(data).withUnsafeBytes(read)
    }

    /// The EXIF and XMP `bytes` (an encoded image of `format`) carries: JPEG `APP1` segments, PNG `eXIf` and an XMP
    /// `iTXt`, WebP `EXIF` and `XMP ` chunks, AVIF's and HEIC's `Exif` and XMP items. GIF has none that Osprey reads.
    static func embedded(in bytes: UnsafeRawBufferPointer, format: ImageFormat) -> ImageMetadata {
        switch format {
        case .jpeg: return jpegMetadata(bytes)
        case .png: return pngMetadata(bytes)
        case .webp: return webPMetadata(bytes)
        case .avif:
            return
                (try? AVIFDecoder.withParsedFile(bytes, options: DecodingOptions()) { decoder throws(CodecError) in
                    AVIFDecoder.metadata(of: try AVIFDecoder.image(of: decoder).pointee)
                }) ?? ImageMetadata()
        case .heic:
            return
                (try? HEIFDecoder.withPrimaryImage(bytes, options: DecodingOptions()) { handle throws(CodecError) in
                    HEIFDecoder.metadata(of: handle, heif: try SharedLibraries.heif)
                }) ?? ImageMetadata()
        default: return ImageMetadata()
        }
    }

    private static let xmpSignature = Array("http://ns.adobe.com/xap/1.0/".utf8) + [0]

    private static func jpegMetadata(_ jpeg: UnsafeRawBufferPointer) -> ImageMetadata {
        var metadata = ImageMetadata()
        if let payload = EXIF.jpegPayload(in: jpeg), payload.count > 6 {
            metadata.exif = Array(payload[6...])
        }
        var offset = 2
        while offset + 4 <= jpeg.count, jpeg[offset] == 0xFF {
            let marker = jpeg[offset + 1]
            if marker == 0xFF {
                offset += 1
                continue
            }
            if marker == 0xDA || marker == 0xD9 { break }
            if (0xD0...0xD7).contains(marker) || marker == 0x01 {
                offset += 2
                continue
            }
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            guard length >= 2, offset + 2 + length <= jpeg.count else { break }
            let start = offset + 4
            if marker == 0xE1, length - 2 > xmpSignature.count,
                UnsafeRawBufferPointer(rebasing: jpeg[start..<start + xmpSignature.count]).elementsEqual(xmpSignature)
            {
                metadata.xmp = Array(jpeg[(start + xmpSignature.count)..<(offset + 2 + length)])
                break
            }
            offset += 2 + length
        }
        return metadata
    }

    private static func pngMetadata(_ png: UnsafeRawBufferPointer) -> ImageMetadata {
        var metadata = ImageMetadata()
        if let exif = PNGChunks.first("eXIf", in: png), exif.count >= 8 { metadata.exif = Array(exif) }
        // iTXt: keyword, NUL, compression flag, method, language, NUL, translated keyword, NUL, text.
        PNGChunks.forEach("iTXt", in: png) { chunk in
            let keyword = Array("XML:com.adobe.xmp".utf8) + [0]
            guard chunk.count > keyword.count + 2, chunk.prefix(keyword.count).elementsEqual(keyword) else {
                return true
            }
            let compressed = chunk[keyword.count] != 0
            var rest = chunk[(keyword.count + 2)...]
            for _ in 0..<2 {  // language tag and translated keyword, each NUL-terminated
                guard let nul = rest.firstIndex(of: 0) else { return false }
                rest = rest[(nul + 1)...]
            }
            let text = UnsafeRawBufferPointer(rebasing: rest)
            metadata.xmp = compressed ? Zlib.inflated(text, limit: 16 << 20) : Array(text)
            return false
        }
        return metadata
    }

    private static func webPMetadata(_ webp: UnsafeRawBufferPointer) -> ImageMetadata {
        guard let libwebpdemux = try? SharedLibraries.webpDemux else { return ImageMetadata() }
        var data = WebPData(bytes: webp.baseAddress?.assumingMemoryBound(to: UInt8.self), size: webp.count)
        guard let demux = libwebpdemux.demux(&data) else { return ImageMetadata() }
        defer { libwebpdemux.WebPDemuxDelete(demux) }
        func chunk(_ fourCC: String) -> [UInt8]? {
            var iterator = WebPChunkIterator()
            guard libwebpdemux.WebPDemuxGetChunk(demux, fourCC, 1, &iterator) != 0 else { return nil }
            defer { libwebpdemux.WebPDemuxReleaseChunkIterator(&iterator) }
            var bytes = Array(UnsafeRawBufferPointer(start: iterator.chunk.bytes, count: iterator.chunk.size))
            // Some writers put JPEG's "Exif\0\0" before the TIFF header.
            if fourCC == "EXIF", bytes.starts(with: Array("Exif".utf8) + [0, 0]) { bytes.removeFirst(6) }
            return bytes
        }
        return ImageMetadata(exif: chunk("EXIF"), xmp: chunk("XMP "))
    }
}
