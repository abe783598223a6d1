import Crypto
public import FoundationEssentials
public import OspreyCodecs

/// What a load's image is encoded as (``ImageManager/encodedImage(for:as:)``): a format, or a rule that picks one
/// from the image, and the encoder's options. Part of the variant's cache key.
///
/// ```swift
/// var output = ImageOutput(.format(.webp))
/// output.options.quality = 75
/// let thumbnail = try await manager.encodedImage(for: request, as: output)
/// send(thumbnail.encoded.bytes, type: thumbnail.encoded.format.mimeType, etag: thumbnail.encoded.digest)
/// ```
public struct ImageOutput: Sendable {
    /// The format to write, or how to choose it once the image is known.
    public enum Format: Sendable, Hashable {
        /// Exactly this one.
        case format(ImageFormat)
        /// The source's format when it is one of `accepted` (any, when `nil`) and an encoder writes it; else GIF for
        /// an animation (when accepted), PNG for an image with alpha, JPEG otherwise. What a proxy answers when the
        /// client's `Accept` decides nothing better.
        case source(accepted: Set<ImageFormat>? = nil)
        /// The smallest encoding among the lossy formats of `accepted` (JPEG, WebP, AVIF, JPEG XL; JPEG only for an
        /// opaque image), each at the same perceptual target (``Quality/perceptual(target:)``'s, or
        /// ``Quality/defaultTarget`` with a fixed quality); for a picture of at most 256 colours (a logo, a
        /// screenshot, a diagram) lossless WebP and PNG too, when accepted. An animation is written as
        /// ``source(accepted:)`` would write it. imgproxy Pro's `format=best`.
        case best(accepted: Set<ImageFormat>)
    }

    /// The format, or the rule that picks it.
    public var format: Format
    /// The encoder's options (quality, metadata policy, colour profile, coders).
    public var options: EncodingOptions
    /// A quality per format, in place of `options.quality` for the format written: a proxy's per-format defaults
    /// when the format is chosen from the image (``Format/source(accepted:)``). Empty by default.
    public var qualities: [ImageFormat: Int] = [:]
    /// How the quality is chosen: ``Quality/fixed`` (``options``' or ``qualities``') by default, or
    /// ``Quality/perceptual(target:)``, the lowest quality whose output looks as good as the target says.
    public var quality = Quality.fixed
    /// The most bytes the result may take: when the quality asked for gives more, the highest quality that fits is
    /// found (JPEG, WebP, AVIF and JPEG XL, at most seven more encodes); when none fits, the lowest quality's result
    /// is kept, as imgproxy's `max_bytes` does. `nil` (no limit) by default.
    public var maxBytes: Int?

    /// Answer with the bytes the image was decoded from when they are fewer than the encoded ones and hold exactly
    /// its pixels: the request's processors all keep pixels (``ImageProcessing/keepsPixels``), it has no decoding size
    /// hint, and the source is a JPEG, PNG or WebP of the format written, upright, of the same size and frames, within
    /// ``maxBytes``; its metadata stripped or kept as ``options``' `metadata` says
    /// (`ImageEncoder.sourceBytes(_:of:as:metadata:)`). An image proxy's "never larger than the source". `false` by
    /// default.
    public var keepsSmallerSource = false

    /// Encodes as `format` with `options`.
    public init(_ format: Format, options: EncodingOptions = EncodingOptions()) {
        self.format = format
        self.options = options
    }

    /// The encoder's options for `format`: ``options`` with the quality ``qualities`` gives it, if any.
    public func options(for format: ImageFormat) -> EncodingOptions {
        var options = options
        if let quality = qualities[format] { options.quality = quality }
        return options
    }

    /// `image` encoded as this output says: its format, that format's quality, within ``maxBytes``.
    ///
    /// - Throws: `CodecError` when the encoder fails.
    public func encode(_ image: Image) throws(CodecError) -> EncodedImage {
        if case .best(let accepted) = format, !image.isAnimated {
            return try encodeBest(image, accepted: accepted)
        }
        let format = format(for: image)
        var options = options(for: format)
        let lossy: Set<ImageFormat> = [.jpeg, .webp, .avif, .jxl]
        let first: [UInt8]
        var chosen: Int?
        if case .perceptual(let target) = quality, lossy.contains(format), !options.isLossless, !image.isAnimated {
            let found = try Self.perceptualEncoding(of: image, as: format, options: options, target: target)
            (first, options.quality, chosen) = (found.bytes, found.quality, found.quality)
        } else {
            first = try ImageEncoder.encode(image, as: format, options: options)
        }
        guard let maxBytes, first.count > maxBytes, lossy.contains(format), !options.isLossless else {
            return EncodedImage(bytes: first, format: format, quality: chosen)
        }
        // The highest quality below the one asked for whose bytes fit: a binary search, the lowest tried kept when
        // none fits.
        var (low, high) = (1, options.quality - 1)
        var best: [UInt8]?
        var smallest = first
        var (bestQuality, smallestQuality) = (options.quality, options.quality)
        while low <= high {
            let quality = (low + high) / 2
            options.quality = quality
            let bytes = try ImageEncoder.encode(image, as: format, options: options)
            if bytes.count < smallest.count { (smallest, smallestQuality) = (bytes, quality) }
            if bytes.count <= maxBytes {
                best = bytes
                bestQuality = quality
                low = quality + 1
            } else {
                high = quality - 1
            }
        }
        return EncodedImage(
            bytes: best ?? smallest, format: format, quality: best != nil ? bestQuality : smallestQuality)
    }

    /// The format `image` is written in.
    public func format(for image: Image) -> ImageFormat {
        switch format {
        case .format(let format):
            return format
        case .best(let accepted) where !image.isAnimated:
            // Before encoding, the first candidate; the encoded image says which one was kept.
            return Self.bestCandidates(for: image, accepted: accepted, coders: options.coders).first ?? .png
        case .source(let accepted), .best(let accepted as Set<ImageFormat>?):
            let coders = options.coders
            func writes(_ format: ImageFormat) -> Bool {
                (accepted?.contains(format) ?? true) && coders.encoder(for: format) != nil
            }
            let source = image.sourceFormat
            if source != .unknown, writes(source) { return source }
            if image.isAnimated, writes(.gif) { return .gif }
            return image.pixelFormat.hasAlpha ? .png : .jpeg
        }
    }

    /// A stable text naming the format rule and every option that changes the bytes; part of the cache key.
    public var identifier: String {
        let format =
            switch self.format {
            case .format(let format): format.name
            case .source(nil): "source"
            case .source(let accepted?): "source(" + accepted.map(\.name).sorted().joined(separator: ",") + ")"
            case .best(let accepted): "best(" + accepted.map(\.name).sorted().joined(separator: ",") + ")"
            }
        let background = options.background
        return [
            "output=\(format)", "q=\(options.quality)", "progressive=\(options.isProgressive)",
            "chroma=\(options.chromaSubsampling)", "png=\(options.pngCompressionLevel)",
            "lossless=\(options.isLossless)",
            "background=\(background.red),\(background.green),\(background.blue)",
            "profile=\(options.embedsColorProfile)", "metadata=\(options.metadata)", "srgb=\(options.tagsSRGB)",
        ].joined(separator: ",")
            + (qualities.isEmpty
                ? "" : ",qualities=" + qualities.map { "\($0.key.name):\($0.value)" }.sorted().joined(separator: ";"))
            + (options.palettePNGQuality.map { ",palette=\($0)" } ?? "")
            + (keepsSmallerSource ? ",keeps-source" : "")
            + effortIdentifier
            + (maxBytes.map { ",maxbytes=\($0)" } ?? "")
            + {
                switch quality {
                case .fixed: ""
                case .perceptual(let target): ",q=auto:\(target)"
                }
            }()
    }
}

extension ImageOutput {
    /// The encoders' effort where it is not the default (so that no earlier key changed): WebP's method, AVIF's
    /// speed, JPEG XL's effort.
    fileprivate var effortIdentifier: String {
        let defaults = EncodingOptions()
        return (options.webpMethod != defaults.webpMethod ? ",webp-method=\(options.webpMethod)" : "")
            + (options.avifSpeed != defaults.avifSpeed ? ",avif-speed=\(options.avifSpeed)" : "")
            + (options.jxlEffort != defaults.jxlEffort ? ",jxl-effort=\(options.jxlEffort)" : "")
    }
}

/// An encoded image: its bytes, their format, and a digest of the bytes.
public struct EncodedImage: Sendable {
    /// The encoded bytes.
    public let bytes: [UInt8]
    /// Their format.
    public let format: ImageFormat
    /// The first 16 bytes of the bytes' SHA-256, in hexadecimal and quoted: a strong HTTP validator (`ETag`), which
    /// changes exactly when the bytes do.
    public let digest: String

    /// The quality a search chose: the perceptual one (``ImageOutput/Quality/perceptual(target:)``), or the highest
    /// within ``ImageOutput/maxBytes``; `nil` when the fixed quality was kept as it was, and for the source's own bytes
    /// (``ImageOutput/keepsSmallerSource``). The disk cache keeps it beside the bytes (as the entry's extended data).
    public let quality: Int?

    /// Wraps `bytes` of `format`, computing their digest; `quality` is the one a perceptual search chose, if any.
    public init(bytes: [UInt8], format: ImageFormat, quality: Int? = nil) {
        self.bytes = bytes
        self.format = format
        self.quality = quality
        digest = Self.digest(of: bytes)
    }

    /// The first 16 bytes of `bytes`' SHA-256, in hexadecimal and quoted: an `ETag` for any response body.
    public static func digest(of bytes: [UInt8]) -> String {
        let hash = SHA256.hash(data: bytes)
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var digest = "\""
        for byte in hash.prefix(16) {
            digest.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
            digest.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0xF)]))
        }
        return digest + "\""
    }
}

/// What ``ImageManager/encodedImage(for:as:)`` produced.
public struct EncodedResult: Sendable {
    /// The encoded image.
    public var encoded: EncodedImage
    /// Where the encoded bytes came from: ``CacheType/memory`` or ``CacheType/disk`` (encoded earlier), or
    /// ``CacheType/notCached`` (encoded now).
    public var cacheType: CacheType
    /// For bytes encoded now, where the image they were encoded from came from (memory, disk, or
    /// ``CacheType/notCached``: downloaded now); `nil` for encoded bytes found in a cache.
    public var imageCacheType: CacheType?
    /// The URL that answered, after redirects; the requested URL for a cache hit.
    public var url: URL
    /// Which caches the origin lets keep the image; ``StoragePermission/anyCache`` for a cache hit.
    public var storagePermission: StoragePermission
    /// What became of the disk write of bytes encoded now, when the load waited for it
    /// (``ImageRequest/Options/waitStoreCache``); `nil` otherwise.
    public var diskStore: DiskStoreOutcome?
}
