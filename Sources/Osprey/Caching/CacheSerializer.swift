public import OspreyCodecs

/// How an ``ImageCache`` turns an image into the bytes its data store keeps, and those bytes back into an image
/// (Kingfisher's `CacheSerializer`): set one with ``ImageCache/Configuration/serializer`` to keep processed images
/// in a format of your choice, or to wrap what is written (compressed, encrypted, with a header of your own).
///
/// ```swift
/// var configuration = ImageCache.Configuration()
/// configuration.serializer = FormatCacheSerializer(format: .png)   // round corners keep their alpha on disk
/// let manager = ImageManager(cache: ImageCache(configuration: configuration))
/// ```
///
/// The cache and the manager call it for every image they write to the data store — an original as downloaded (with
/// its bytes as `original`), one a transform changed, a processed variant
/// (``ImageManager/Configuration/storesProcessedImagesOnDisk``) — and for every image they read back from it, on
/// their decoding and processing threads, so it may take its time. It is not called for bytes the manager keeps as
/// they are: data-only loads (`ImageManager.data(for:)`, prefetching to disk) and encoded outputs
/// (``ImageManager/encodedImage(for:as:)``); an entry written by those is read back with ``image(from:options:)``
/// too, so a serializer that wraps what it writes should also read bytes it did not wrap.
public protocol CacheSerializer: Sendable {
    /// The bytes to keep for `image`; `original` is what it was decoded from when it is an original as downloaded
    /// (`nil` for a processed or transformed image). `coders` are the cache's coders. Throwing keeps nothing: the
    /// store fails with ``CacheError/cacheWriteFailed(key:reason:)``.
    func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8]

    /// The image kept bytes hold, decoded with `options` (the size, limits and colour handling the load asks for).
    /// Throwing makes the entry a miss.
    func image(from data: [UInt8], options: DecodingOptions) throws -> Image
}

extension CacheSerializer {
    /// Decodes `data` as an image file, as Osprey's decoders read it.
    public func image(from data: [UInt8], options: DecodingOptions) throws -> Image {
        try ImageDecoder.decode(data, options: options)
    }
}

/// What an ``ImageCache`` keeps by default: an original's own bytes as downloaded, and an image without them encoded
/// in its source format (PNG when it has alpha that format would drop, no known format, or one the coders cannot
/// write). Reads decode the bytes as the file they are.
public struct DefaultCacheSerializer: CacheSerializer {
    /// Makes the default serializer.
    public init() {}

    public func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8] {
        if let original { return original }
        var options = EncodingOptions()
        options.coders = coders
        return try ImageEncoder.encode(image, as: Self.format(for: image, coders: coders), options: options)
    }

    /// The format an image kept without its bytes is written in: its own, or PNG when it has alpha (JPEG would drop
    /// it), no known format, or one no encoder of `coders` writes.
    static func format(for image: Image, coders: ImageCoderRegistry) -> ImageFormat {
        switch image.sourceFormat {
        case .unknown: .png
        case .jpeg where image.pixelFormat.hasAlpha: .png
        case let format: coders.encoder(for: format) == nil ? .png : format
        }
    }
}

/// Keeps every image in one format (Kingfisher's `FormatIndicatedCacheSerializer`): an original already in that
/// format as its own bytes, anything else encoded with ``options``. For processed images whose look the source
/// format would lose (PNG for rounded corners' alpha) or to keep a cache small (WebP, AVIF).
public struct FormatCacheSerializer: CacheSerializer {
    /// The format every image is kept in.
    public var format: ImageFormat
    /// How images are encoded (quality, effort, metadata); the cache's coders replace its registry.
    public var options: EncodingOptions

    /// Makes a serializer that keeps images as `format`, encoded with `options`.
    public init(format: ImageFormat, options: EncodingOptions = EncodingOptions()) {
        self.format = format
        self.options = options
    }

    public func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8] {
        if let original, ImageFormat(sniffing: original) == format { return original }
        var options = options
        options.coders = coders
        return try ImageEncoder.encode(image, as: format, options: options)
    }
}
