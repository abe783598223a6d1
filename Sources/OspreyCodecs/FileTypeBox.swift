/// The `ftyp` box that opens every ISO base media file (AVIF, HEIF, the JPEG XL container): its major brand and the
/// compatible ones, which say what the file is before anything else is read.
struct FileTypeBox: Sendable {
    /// The major brand, as four ASCII bytes read big-endian (`avif`, `heic`, ...).
    let major: UInt32
    /// The compatible brands the box lists, in order, among those within the bytes read.
    let compatible: [UInt32]

    /// The most bytes recognising a file looks at: the box header, the major brand, the minor version and up to 12
    /// compatible brands (real AVIF and HEIC files list 3 to 8).
    static let recognitionLength = 64

    /// Reads the box at the start of `bytes`; `nil` when they do not begin with an `ftyp` box.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 16, Self.fourCC(bytes, at: 4) == Self.brand("ftyp") else { return nil }
        let size = Int(Self.fourCC(bytes, at: 0))
        // A size of 0 (to the end of the file) or 1 (a 64-bit size follows) is legal for some boxes but never written
        // for `ftyp`; below 16 the box cannot hold its own fields.
        guard size >= 16 else { return nil }
        major = Self.fourCC(bytes, at: 8)
        compatible = stride(from: 16, to: min(size, bytes.count) - 3, by: 4).map { Self.fourCC(bytes, at: $0) }
    }

    /// Whether the file names `brand`, as its major brand or a compatible one.
    func lists(_ brand: UInt32) -> Bool { major == brand || compatible.contains(brand) }

    /// `name`, four ASCII characters, as a brand.
    static func brand(_ name: StaticString) -> UInt32 {
        precondition(name.utf8CodeUnitCount == 4, "a brand is four characters")
        return name.withUTF8Buffer { $0.reduce(0) { $0 << 8 | UInt32($1) } }
    }

    /// Whether this is an AVIF file: its major brand is `avif` (a still) or `avis` (a sequence), or, under a
    /// neutral major brand such as `mif1`, it lists one of them. A HEIF major brand wins over a compatible AVIF one:
    /// such a file's primary image is HEVC.
    var isAVIF: Bool {
        let avif = Self.brand("avif")
        let avis = Self.brand("avis")
        if major == avif || major == avis { return true }
        if Self.heifBrands.contains(major) { return false }
        return compatible.contains(avif) || compatible.contains(avis)
    }

    /// The HEVC-based HEIF brands (ISO/IEC 23008-12 annex B).
    static let heifBrands: Set<UInt32> = Set(
        ["heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs"].map {
            $0.utf8.reduce(0) { $0 << 8 | UInt32($1) }
        })

    private static func fourCC(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }
}
