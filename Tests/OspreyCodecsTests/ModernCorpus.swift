import OspreyCodecs
import OspreyTesting
import Testing

/// What the AVIF, HEIC and JPEG XL corpus suites check alike.
enum ModernCorpus {
    /// Every must-error entry throws; every no-crash one decodes or throws, within the limits; with and without
    /// partial images.
    static func checkRefusals(_ manifest: Manifest, _ entries: [Manifest.Entry]) throws {
        var partial = DecodingOptions()
        partial.allowsPartialImages = true
        for entry in entries where entry.expected != .decodeOK {
            let bytes = try manifest.bytes(of: entry)
            for options in [DecodingOptions(), partial] {
                do {
                    let image = try ImageDecoder.decode(bytes, options: options)
                    #expect(entry.expected == .noCrash, "\(entry.path) decoded to \(image.width)x\(image.height)")
                    #expect(image.cost <= options.limits.maxPixelCount * 4, "\(entry.path)")
                } catch {
                    // Throwing is what a must-error file has to do, and what a no-crash one may do.
                }
            }
        }
    }

    /// What the container lists without decoding (``ImageHeader/frames(in:)``) is what the decoder produced: the
    /// frame count and, for an animation, each duration and the loop count.
    static func checkListedFrames(_ bytes: [UInt8], agreeWith image: Image, _ path: String) throws {
        let frames = try ImageHeader.frames(in: bytes)
        #expect(frames.count == image.frames.count, "\(path)")
        if image.frames.count > 1 {
            #expect(frames.durations == image.frames.map(\.duration), "\(path)")
            #expect(frames.loopCount == image.loopCount, "\(path)")
        }
    }
}
