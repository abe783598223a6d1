/// The item structure of a HEIF file (ISO/IEC 23008-12), read by Osprey itself before any C library sees the file:
/// every box inside its parent, a bounded number of items and references, no item deriving from itself however
/// indirectly, and each image item's declared size. libheif 1.15 has no such limits of its own and follows a cycle of
/// derived images until it overflows its stack.
struct HEIFStructure: Sendable {
    /// What one item is.
    struct Item: Sendable, Equatable {
        var type: UInt32
        /// The size its `ispe` property declares, when it has one.
        var width = 0
        var height = 0
    }

    /// The primary item (`pitm`).
    let primary: UInt32
    /// Every item of `iinf`, by ID.
    let items: [UInt32: Item]
    /// The `dimg` references (derived image → its inputs), by the derived item's ID.
    let derivations: [UInt32: [UInt32]]

    /// The most items a file may declare: real files have a few (an image, its thumbnail, EXIF), a grid of 48 MP
    /// photos a few hundred tiles.
    static let maximumItems = 4_096
    /// The deepest chain of derived images (a grid of overlays of identity transforms, ...): real files have 2.
    static let maximumDerivationDepth = 8

    /// Reads the structure of `bytes`, or throws ``CodecError/malformed(format:reason:)`` naming what is wrong.
    init(_ bytes: UnsafeRawBufferPointer, format: ImageFormat) throws(CodecError) {
        func fail(_ reason: String) -> CodecError { .malformed(format: format, reason: reason) }
        var reader = BoxReader(bytes: bytes, range: 0..<bytes.count)
        var meta: Range<Int>?
        while let box = try reader.next(format: format) {
            if box.type == FileTypeBox.brand("meta") {
                guard meta == nil else { throw fail("it has two meta boxes") }
                meta = box.body
            }
        }
        guard let meta, meta.count >= 4 else { throw fail("it has no meta box") }
        // A full box: version and flags first.
        var children = BoxReader(bytes: bytes, range: meta.lowerBound + 4..<meta.upperBound)
        var primary: UInt32?
        var items: [UInt32: Item] = [:]
        var derivations: [UInt32: [UInt32]] = [:]
        var properties: [(type: UInt32, body: Range<Int>)] = []
        var associations: [UInt32: [Int]] = [:]
        while let box = try children.next(format: format) {
            var body = ByteReader(bytes: bytes, range: box.body)
            switch box.type {
            case FileTypeBox.brand("pitm"):
                let version = try body.fullBoxVersion(format: format)
                primary = version == 0 ? UInt32(try body.u16(format: format)) : try body.u32(format: format)
            case FileTypeBox.brand("iinf"):
                let version = try body.fullBoxVersion(format: format)
                let count = version == 0 ? Int(try body.u16(format: format)) : Int(try body.u32(format: format))
                guard count <= Self.maximumItems else { throw fail("it declares \(count) items") }
                var entries = BoxReader(bytes: bytes, range: body.remaining)
                while let entry = try entries.next(format: format) {
                    guard entry.type == FileTypeBox.brand("infe") else { continue }
                    var infe = ByteReader(bytes: bytes, range: entry.body)
                    let infeVersion = try infe.fullBoxVersion(format: format)
                    // Versions 0 and 1 have no item type: they describe files, not images.
                    guard infeVersion >= 2 else { continue }
                    let id = infeVersion == 2 ? UInt32(try infe.u16(format: format)) : try infe.u32(format: format)
                    _ = try infe.u16(format: format)  // item_protection_index
                    let type = try infe.u32(format: format)
                    guard items[id] == nil else { throw fail("item \(id) is declared twice") }
                    items[id] = Item(type: type)
                    guard items.count <= Self.maximumItems else {
                        throw fail("it declares over \(Self.maximumItems) items")
                    }
                }
            case FileTypeBox.brand("iref"):
                let version = try body.fullBoxVersion(format: format)
                var references = BoxReader(bytes: bytes, range: body.remaining)
                var total = 0
                while let reference = try references.next(format: format) {
                    var fields = ByteReader(bytes: bytes, range: reference.body)
                    func id() throws(CodecError) -> UInt32 {
                        version == 0 ? UInt32(try fields.u16(format: format)) : try fields.u32(format: format)
                    }
                    let from = try id()
                    let count = Int(try fields.u16(format: format))
                    total += count
                    guard total <= Self.maximumItems * 4 else { throw fail("it declares over \(total) references") }
                    var targets: [UInt32] = []
                    for _ in 0..<count { targets.append(try id()) }
                    if targets.contains(from) { throw fail("item \(from) refers to itself") }
                    if reference.type == FileTypeBox.brand("dimg") {
                        guard derivations[from] == nil else { throw fail("item \(from) has two sets of inputs") }
                        derivations[from] = targets
                    }
                }
            case FileTypeBox.brand("iprp"):
                var inner = BoxReader(bytes: bytes, range: box.body)
                while let child = try inner.next(format: format) {
                    if child.type == FileTypeBox.brand("ipco") {
                        var list = BoxReader(bytes: bytes, range: child.body)
                        while let property = try list.next(format: format) {
                            properties.append((property.type, property.body))
                            guard properties.count <= Self.maximumItems * 8 else { throw fail("too many properties") }
                        }
                    } else if child.type == FileTypeBox.brand("ipma") {
                        var ipma = ByteReader(bytes: bytes, range: child.body)
                        let (version, flags) = try ipma.fullBoxVersionAndFlags(format: format)
                        let count = Int(try ipma.u32(format: format))
                        guard count <= Self.maximumItems else { throw fail("ipma lists \(count) items") }
                        for _ in 0..<count {
                            let id = version < 1 ? UInt32(try ipma.u16(format: format)) : try ipma.u32(format: format)
                            let associationCount = Int(try ipma.u8(format: format))
                            var indices: [Int] = []
                            for _ in 0..<associationCount {
                                // The essential bit first, then the 1-based index in 7 or 15 bits.
                                let index =
                                    flags & 1 != 0
                                    ? Int(try ipma.u16(format: format) & 0x7FFF)
                                    : Int(try ipma.u8(format: format) & 0x7F)
                                indices.append(index)
                            }
                            associations[id, default: []] += indices
                        }
                    }
                }
            default:
                continue
            }
        }
        guard let primary else { throw fail("it names no primary item (pitm)") }
        guard items[primary] != nil else { throw fail("its primary item \(primary) is not declared") }
        // Each item's size from its ispe property.
        for (id, indices) in associations where items[id] != nil {
            for index in indices where index >= 1 && index <= properties.count {
                let property = properties[index - 1]
                guard property.type == FileTypeBox.brand("ispe") else { continue }
                var ispe = ByteReader(bytes: bytes, range: property.body)
                _ = try ispe.fullBoxVersion(format: format)
                items[id]?.width = Int(try ispe.u32(format: format))
                items[id]?.height = Int(try ispe.u32(format: format))
            }
        }
        for (from, inputs) in derivations {
            guard items[from] != nil else { throw fail("a derivation names an undeclared item \(from)") }
            for input in inputs where items[input] == nil {
                throw fail("item \(from) derives from an undeclared item \(input)")
            }
        }
        self.primary = primary
        self.items = items
        self.derivations = derivations
        try checkDerivations(format: format)
    }

    /// Throws when an item derives from itself through other items, or through a chain deeper than
    /// ``maximumDerivationDepth``.
    private func checkDerivations(format: ImageFormat) throws(CodecError) {
        enum Mark { case visiting, done }
        var marks: [UInt32: Mark] = [:]
        // Depth-first, with an explicit stack (a hostile file must not overflow ours either).
        for start in derivations.keys where marks[start] == nil {
            var stack: [(id: UInt32, next: Int)] = [(start, 0)]
            marks[start] = .visiting
            while let top = stack.last {
                guard stack.count <= Self.maximumDerivationDepth + 1 else {
                    throw .malformed(
                        format: format, reason: "its derived images nest over \(Self.maximumDerivationDepth) deep")
                }
                let inputs = derivations[top.id] ?? []
                if top.next == inputs.count {
                    marks[top.id] = .done
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].next += 1
                let input = inputs[top.next]
                switch marks[input] {
                case .visiting?:
                    throw .malformed(format: format, reason: "item \(input) derives from itself through other items")
                case .done?:
                    continue
                case nil:
                    marks[input] = .visiting
                    stack.append((input, 0))
                }
            }
        }
    }

    /// The primary item's declared size (0 × 0 when it has no `ispe`).
    var primarySize: (width: Int, height: Int) {
        let item = items[primary]
        return (item?.width ?? 0, item?.height ?? 0)
    }
}

/// Boxes one after another within a range of bytes: each one's type and body, its size checked against the range.
struct BoxReader {
    let bytes: UnsafeRawBufferPointer
    var range: Range<Int>

    struct Box {
        let type: UInt32
        let body: Range<Int>
    }

    /// The next box, or `nil` at the end of the range; throws for a box whose size does not fit.
    mutating func next(format: ImageFormat) throws(CodecError) -> Box? {
        guard range.count >= 8 else {
            if range.isEmpty { return nil }
            throw .malformed(format: format, reason: "\(range.count) stray bytes after its last box")
        }
        var header = ByteReader(bytes: bytes, range: range)
        var size = Int(try header.u32(format: format))
        let type = try header.u32(format: format)
        var headerLength = 8
        if size == 1 {
            let large = try header.u64(format: format)
            guard large <= UInt64(range.count) else {
                throw .malformed(format: format, reason: "a box runs past its parent")
            }
            size = Int(large)
            headerLength = 16
        } else if size == 0 {
            size = range.count  // to the end of the parent
        }
        guard size >= headerLength, size <= range.count else {
            throw .malformed(format: format, reason: "a box of \(size) bytes does not fit in its parent")
        }
        let box = Box(type: type, body: range.lowerBound + headerLength..<range.lowerBound + size)
        range = range.lowerBound + size..<range.upperBound
        return box
    }
}

/// Big-endian fields read from a range of bytes, never past its end.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    var range: Range<Int>

    var remaining: Range<Int> { range }

    mutating func u8(format: ImageFormat) throws(CodecError) -> UInt8 {
        guard !range.isEmpty else { throw .malformed(format: format, reason: "a box ends in the middle of a field") }
        defer { range = range.lowerBound + 1..<range.upperBound }
        return bytes[range.lowerBound]
    }

    mutating func u16(format: ImageFormat) throws(CodecError) -> UInt16 {
        UInt16(try u8(format: format)) << 8 | UInt16(try u8(format: format))
    }

    mutating func u32(format: ImageFormat) throws(CodecError) -> UInt32 {
        UInt32(try u16(format: format)) << 16 | UInt32(try u16(format: format))
    }

    mutating func u64(format: ImageFormat) throws(CodecError) -> UInt64 {
        UInt64(try u32(format: format)) << 32 | UInt64(try u32(format: format))
    }

    mutating func fullBoxVersion(format: ImageFormat) throws(CodecError) -> UInt8 {
        try fullBoxVersionAndFlags(format: format).version
    }

    mutating func fullBoxVersionAndFlags(format: ImageFormat) throws(CodecError) -> (version: UInt8, flags: UInt32) {
        let word = try u32(format: format)
        return (UInt8(word >> 24), word & 0xFF_FFFF)
    }
}
