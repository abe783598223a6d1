internal import COspreyLibraryLoader

extension ImageHeader {
    /// What an image's container says of its frames, read without decoding a pixel: for GIF, its image descriptors
    /// and graphic control extensions, walked block by block; for WebP, its `ANIM` and `ANMF` chunks; for AVIF, a
    /// sequence's sample table and edit list; for JPEG XL, its frame headers; one frame for JPEG, PNG (an APNG's
    /// default image, as the decoder reads it), HEIC and a still WebP, AVIF or JPEG XL.
    ///
    /// The numbers are the decoder's: durations of 10 ms or less in a GIF read as 100 ms, a loop count of 0 plays
    /// forever and a GIF without a NETSCAPE2.0 block plays once. A container cut short lists the frames it holds
    /// whole. What the frames' pixels would decode to is not checked: ``ImageDecoder`` does that.
    public struct Frames: Sendable, Hashable {
        /// How many frames the container lists.
        public var count: Int
        /// How many times an animation plays: 0 forever.
        public var loopCount: Int
        /// Each frame's duration, in order; empty for a still image.
        public var durations: [Duration]
    }

    /// The frames `data`'s container lists (see ``Frames``).
    ///
    /// - Throws: what `init(reading:)` throws for a header it cannot read.
    public static func frames(in data: some Collection<UInt8>) throws(CodecError) -> Frames {
        let result: Result<Frames, CodecError> =
            data.withContiguousStorageIfAvailable { Self.frames(UnsafeRawBufferPointer($0)) }
            ?? Array(data).withUnsafeBytes { Self.frames($0) }
        return try result.get()
    }

    /// The animation an APNG's `acTL` and `fcTL` chunks describe — its frame count, plays and each frame's delay (a
    /// zero denominator meaning hundredths) — or `nil` for a PNG without `acTL` (and any other file). Osprey decodes
    /// an APNG's default image: this is what the file holds, for reports such as `/info`.
    public static func animatedPNGFrames(in data: some Collection<UInt8>) -> Frames? {
        let read: (UnsafeRawBufferPointer) -> Frames? = { png in
            guard png.count > 8, png.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
                let control = PNGChunks.first("acTL", in: png), control.count >= 8
            else { return nil }
            func number(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> Int {
                Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            }
            let count = number(control, 0)
            guard count > 0 else { return nil }
            var durations: [Duration] = []
            PNGChunks.forEach("fcTL", in: png) { frame in
                guard frame.count >= 26 else { return true }
                let numerator = Int(frame[20]) << 8 | Int(frame[21])
                let denominator = Int(frame[22]) << 8 | Int(frame[23])
                durations.append(.milliseconds(numerator * 1000 / (denominator == 0 ? 100 : denominator)))
                return durations.count < count
            }
            return Frames(
                count: count, loopCount: number(control, 4), durations: durations.count == count ? durations : [])
        }
        return data.withContiguousStorageIfAvailable { read(UnsafeRawBufferPointer($0)) }
            ?? Array(data).withUnsafeBytes(read)
    }

    static func frames(_ bytes: UnsafeRawBufferPointer) -> Result<Frames, CodecError> {
        Result { () throws(CodecError) -> Frames in
            let header = try read(bytes).get()
            switch header.format {
            case .gif:
                var blocks = GIFBlocks(bytes)
                return blocks.frames()
            case .webp: return try webPFrames(bytes)
            case .avif: return try AVIFDecoder.frames(bytes)
            case .jxl: return try JXLDecoder.frames(bytes)
            default: return Frames(count: 1, loopCount: 0, durations: [])
            }
        }
    }

    private static func webPFrames(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> Frames {
        let libwebpdemux = try SharedLibraries.webpDemux
        var data = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
        guard let demux = libwebpdemux.demux(&data) else { return Frames(count: 1, loopCount: 0, durations: []) }
        defer { libwebpdemux.WebPDemuxDelete(demux) }
        let count = Int(libwebpdemux.WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
        guard libwebpdemux.WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS) & ANIMATION_FLAG.rawValue != 0, count > 0 else {
            return Frames(count: 1, loopCount: 0, durations: [])
        }
        var durations: [Duration] = []
        var iterator = WebPIterator()
        if libwebpdemux.WebPDemuxGetFrame(demux, 1, &iterator) != 0 {
            repeat {
                durations.append(.milliseconds(Int(iterator.duration)))
            } while libwebpdemux.WebPDemuxNextFrame(&iterator) != 0
            libwebpdemux.WebPDemuxReleaseIterator(&iterator)
        }
        let loopCount = Int(libwebpdemux.WebPDemuxGetI(demux, WEBP_FF_LOOP_COUNT))
        return Frames(count: durations.count, loopCount: loopCount, durations: durations)
    }
}

/// A GIF's blocks, walked without decompressing anything: each image descriptor is a frame, the graphic control
/// extension before it gives its delay, a NETSCAPE2.0 (or ANIMEXTS1.0) block before it the loop count.
struct GIFBlocks {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    /// Whether a graphic control extension walked so far names a transparent colour index.
    private(set) var hasTransparency = false

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    mutating func frames() -> ImageHeader.Frames {
        var durations: [Duration] = []
        var loopCount = 1
        var pendingLoopCount: Int?
        var delay = 0
        // Signature and version (6), logical screen descriptor (7), then the global colour table.
        offset = 13
        guard bytes.count >= 13 else { return ImageHeader.Frames(count: 0, loopCount: 1, durations: []) }
        skipColorTable(flags: bytes[10])
        walk: while let introducer = byte() {
            switch introducer {
            case 0x21:  // extension: a label, then sub-blocks
                guard let label = byte() else { break walk }
                var isFirst = true
                var isLoopBlock = false
                while true {
                    guard let length = byte().map(Int.init), offset + length <= bytes.count else { break walk }
                    if length == 0 { break }
                    let data = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
                    if isFirst, label == 0xF9, length >= 4 {
                        delay = Int(data[1]) | Int(data[2]) << 8
                        if data[0] & 0x01 != 0 { hasTransparency = true }
                    } else if isFirst, label == 0xFF, length == 11 {
                        isLoopBlock = data.elementsEqual("NETSCAPE2.0".utf8) || data.elementsEqual("ANIMEXTS1.0".utf8)
                    } else if isLoopBlock, length >= 3, data[0] == 1 {
                        pendingLoopCount = Int(data[1]) | Int(data[2]) << 8
                        isLoopBlock = false
                    }
                    isFirst = false
                    offset += length
                }
            case 0x2C:  // image descriptor (9), local colour table, LZW minimum code size (1), then sub-blocks
                guard offset + 9 <= bytes.count else { break walk }
                let flags = bytes[offset + 8]
                offset += 9
                skipColorTable(flags: flags)
                guard byte() != nil, skipSubBlocks() else { break walk }
                durations.append(delay <= 1 ? .milliseconds(100) : .milliseconds(delay * 10))
                if let pending = pendingLoopCount {
                    loopCount = pending
                    pendingLoopCount = nil
                }
                delay = 0
            default:  // 0x3B, the trailer, or anything else: the end
                break walk
            }
        }
        return ImageHeader.Frames(
            count: durations.count, loopCount: loopCount, durations: durations.count > 1 ? durations : [])
    }

    private mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func skipColorTable(flags: UInt8) {
        if flags & 0x80 != 0 { offset += 3 << (Int(flags & 0x07) + 1) }
    }

    /// Skips sub-blocks up to and including the terminator; `false` when the data ends first.
    private mutating func skipSubBlocks() -> Bool {
        while let length = byte() {
            if length == 0 { return true }
            offset += Int(length)
        }
        return false
    }
}
