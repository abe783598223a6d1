/// How many times an image sequence (AVIF's `avis`) plays, read from its edit list, which libavif 0.11 does not read.
///
/// ISO/IEC 14496-12 and the AVIF specification (§ 7.6): the colour track's (`hdlr` `pict`) edit list (`edts`/`elst`)
/// with its "repeat" flag set plays the edit again and again for as long as the track's duration (`tkhd`) lasts —
/// forever when that duration is all ones ("indefinite"). Without the flag the sequence plays once. Without an edit
/// list nothing is said, and it plays forever, as browsers play it. The count is libavif 1.x's (its repetition count
/// plus one): the track's duration over the edit's, rounded up.
enum SequenceRepetition {
    /// How many times the sequence in `bytes` plays: 0 for forever (``Image/loopCount``'s convention), 1 for once.
    /// A structure that cannot be read says nothing, so forever.
    static func loopCount(in bytes: UnsafeRawBufferPointer) -> Int {
        guard let track = try? colourTrack(in: bytes) else { return 0 }
        return loopCount(trackDuration: track.duration, edit: track.edit)
    }

    /// The plays an edit list gives; `edit` is `nil` without one.
    static func loopCount(trackDuration: UInt64?, edit: (repeats: Bool, segmentDuration: UInt64)?) -> Int {
        guard let edit else { return 0 }
        guard edit.repeats else { return 1 }
        guard let trackDuration, edit.segmentDuration > 0 else { return 0 }
        let plays = trackDuration / edit.segmentDuration + (trackDuration % edit.segmentDuration == 0 ? 0 : 1)
        return plays > UInt64(Int32.max) ? 0 : max(Int(plays), 1)
    }

    private struct Track {
        var isColour = false
        /// `nil` when indefinite.
        var duration: UInt64?
        var edit: (repeats: Bool, segmentDuration: UInt64)?
    }

    private static let format = ImageFormat.avif

    /// The first track of `moov` whose handler is `pict` (an alpha track is `auxv`); `nil` without one.
    private static func colourTrack(in bytes: UnsafeRawBufferPointer) throws(CodecError) -> Track? {
        var top = BoxReader(bytes: bytes, range: 0..<bytes.count)
        while let box = try top.next(format: format) {
            guard box.type == FileTypeBox.brand("moov") else { continue }
            var movie = BoxReader(bytes: bytes, range: box.body)
            while let child = try movie.next(format: format) {
                guard child.type == FileTypeBox.brand("trak") else { continue }
                let track = try self.track(bytes, child.body)
                if track.isColour { return track }
            }
            return nil
        }
        return nil
    }

    private static func track(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) throws(CodecError) -> Track {
        var track = Track()
        var boxes = BoxReader(bytes: bytes, range: range)
        while let box = try boxes.next(format: format) {
            var fields = ByteReader(bytes: bytes, range: box.body)
            switch box.type {
            case FileTypeBox.brand("tkhd"):
                // Version 1: 64-bit creation and modification times and duration; version 0: 32-bit.
                let version = try fields.fullBoxVersion(format: format)
                if version == 1 {
                    for _ in 0..<2 { _ = try fields.u64(format: format) }
                    for _ in 0..<2 { _ = try fields.u32(format: format) }  // track ID, reserved
                    let duration = try fields.u64(format: format)
                    track.duration = duration == .max ? nil : duration
                } else {
                    for _ in 0..<4 { _ = try fields.u32(format: format) }
                    let duration = try fields.u32(format: format)
                    track.duration = duration == .max ? nil : UInt64(duration)
                }
            case FileTypeBox.brand("edts"):
                var edits = BoxReader(bytes: bytes, range: box.body)
                while let edit = try edits.next(format: format) {
                    guard edit.type == FileTypeBox.brand("elst") else { continue }
                    var list = ByteReader(bytes: bytes, range: edit.body)
                    let (version, flags) = try list.fullBoxVersionAndFlags(format: format)
                    guard try list.u32(format: format) > 0 else { break }  // no entries
                    let segment = version == 1 ? try list.u64(format: format) : UInt64(try list.u32(format: format))
                    track.edit = (flags & 1 != 0, segment)
                }
            case FileTypeBox.brand("mdia"):
                var media = BoxReader(bytes: bytes, range: box.body)
                while let child = try media.next(format: format) {
                    guard child.type == FileTypeBox.brand("hdlr") else { continue }
                    var handler = ByteReader(bytes: bytes, range: child.body)
                    _ = try handler.fullBoxVersion(format: format)
                    _ = try handler.u32(format: format)  // pre_defined
                    track.isColour = try handler.u32(format: format) == FileTypeBox.brand("pict")
                }
            default:
                break
            }
        }
        return track
    }
}
