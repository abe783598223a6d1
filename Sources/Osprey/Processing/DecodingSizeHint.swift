public import OspreyCodecs

/// How small an image may be decoded for a request, decided from its header before a pixel is decoded: the
/// decoder then scales while decoding (JPEG by DCT scaling, WebP stills by any factor) instead of making the full
/// image first. ``ImageProcessors/Downsample`` is one; a request takes its first processor's hint by default
/// (``ImageRequest/decodingSizeHint``).
///
/// ```swift
/// struct LongSide: DecodingSizeHint {      // decode no smaller than 512 on the long side
///     var identifier: String { "longside(512)" }
///     func decodingSize(for header: ImageHeader) -> ImageSize? { ... }
/// }
/// request.decodingSizeHint = LongSide()
/// ```
public protocol DecodingSizeHint: Sendable {
    /// A stable text naming the rule and its parameters; part of the cache key when set on a request explicitly.
    var identifier: String { get }
    /// The size to ask the decoder for (`DecodingOptions.targetSize`, in display orientation) so that what it
    /// returns is still large enough; `nil` for the full size.
    func decodingSize(for header: ImageHeader) throws -> ImageSize?
}

extension DecodingSizeHint {
    /// `options` with the target size `data`'s header calls for (unless they set one of their own); a header that
    /// cannot be read, or a hint that throws, leaves them as they are (the decoder then reports the header).
    public func decodingOptions(for data: [UInt8], options: DecodingOptions) -> DecodingOptions {
        var options = options
        if options.targetSize == nil, let header = try? ImageHeader(reading: data, coders: options.coders),
            let size = try? decodingSize(for: header)
        {
            options.targetSize = size
        }
        return options
    }
}

extension ImageProcessors.Downsample: DecodingSizeHint {}
