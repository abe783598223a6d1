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
/// It works in two layers. ``data(for:original:coders:)`` and ``image(from:options:)`` choose the image file kept for
/// an image (its format), and read one back. ``wrap(_:)`` and ``unwrap(_:)`` (the bytes as they are, by default)
/// turn every image file into what the data store holds and back — compressed, encrypted, with a header of one's
/// own — whoever writes it: images the cache and the manager store (an original as downloaded, with its bytes as
/// `original`; one a transform changed; a processed variant, ``ImageManager/Configuration/storesProcessedImagesOnDisk``)
/// and bytes the manager keeps as they are, without an image (data-only loads, `ImageManager.data(for:)` and
/// prefetching to disk; encoded outputs, ``ImageManager/encodedImage(for:as:)``). Every read of the data store
/// unwraps first, so ``image(from:options:)`` and data-only reads are given the image file. It is called on the
/// cache's and manager's own threads, so it may take its time.
public protocol CacheSerializer: Sendable {
    /// The image file to keep for `image`; `original` is what it was decoded from when it is an original as
    /// downloaded (`nil` for a processed or transformed image). `coders` are the caller's coders. Throwing keeps
    /// nothing: the store fails with ``CacheError/cacheWriteFailed(key:reason:)``.
    func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8]

    /// The image an image file holds (what ``unwrap(_:)`` gave), decoded with `options` (the size, limits and colour
    /// handling the load asks for). Throwing makes the entry a miss.
    func image(from data: [UInt8], options: DecodingOptions) throws -> Image

    /// What the data store keeps for the image file `data`: every write of the cache and the manager passes here.
    /// The bytes as they are by default. Throwing keeps nothing: the store fails with
    /// ``CacheError/cacheWriteFailed(key:reason:)``.
    func wrap(_ data: [UInt8]) throws -> [UInt8]

    /// The image file in what the data store keeps (what ``wrap(_:)`` made): every read passes here first. The bytes
    /// as they are by default. Throwing makes the entry a miss.
    func unwrap(_ data: [UInt8]) throws -> [UInt8]
}

extension CacheSerializer {
    /// Decodes `data` as an image file, as Osprey's decoders read it.
    public func image(from data: [UInt8], options: DecodingOptions) throws -> Image {
        try ImageDecoder.decode(data, options: options)
    }

    /// Keeps the image file as it is.
    public func wrap(_ data: [UInt8]) throws -> [UInt8] { data }

    /// Reads the kept bytes as the image file they are.
    public func unwrap(_ data: [UInt8]) throws -> [UInt8] { data }
}

/// What an ``ImageCache`` keeps by default: an original's own bytes as downloaded, and an image without them encoded
/// in its source format (PNG when it has alpha that format would drop, no known format, or one the coders cannot
/// write). Reads decode the bytes as the file they are.
public struct DefaultCacheSerializer: CacheSerializer {
    /// Makes the default serializer.
    public init() {}

    /// `original` when given, else `image` encoded in its source format (PNG when it has alpha that format would drop,
    /// no known format, or one `coders` cannot write).
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

    /// `original` when it is already in ``format``, else `image` encoded as ``format`` with ``options`` and `coders`.
    public func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8] {
        if let original, ImageFormat(sniffing: original) == format { return original }
        var options = options
        options.coders = coders
        return try ImageEncoder.encode(image, as: format, options: options)
    }
}
