import OspreyCodecs

/// Decodes with a job's options, at the size the request's decoding-size hint gives from the header.
struct JobDecoder: Sendable {
    let options: DecodingOptions
    let hint: (any DecodingSizeHint)?

    /// Decodes with `options`, at the size `request`'s ``ImageRequest/decodingSizeHint`` gives, unless the request
    /// sets a target size of its own.
    init(options: DecodingOptions, request: ImageRequest) {
        self.options = options
        hint = request.targetSize == nil ? request.decodingSizeHint : nil
    }

    /// Decodes with `options` as they are.
    init(options: DecodingOptions) {
        self.options = options
        hint = nil
    }

    /// The size a decode of an image with `header` is asked for: the options' target size, else the hint's; `nil`
    /// for the full size.
    func size(for header: ImageHeader) -> ImageSize? {
        if let size = options.targetSize { return size }
        return (try? hint?.decodingSize(for: header)) ?? nil
    }

    /// The options a decode of `bytes` runs with.
    func options(for bytes: [UInt8]) -> DecodingOptions {
        hint?.decodingOptions(for: bytes, options: options) ?? options
    }

    func decode(_ bytes: [UInt8]) throws(CodecError) -> Image {
        try ImageDecoder.decode(bytes, options: options(for: bytes))
    }

    /// Decodes bytes read from the data store, as `serializer` reads what it keeps (the default serializer decodes
    /// them as ``decode(_:)`` does).
    func decodeStored(_ bytes: [UInt8], serializer: any CacheSerializer) throws -> Image {
        try serializer.image(from: bytes, options: options(for: bytes))
    }

    /// What decoding `bytes` will take, at the size ``decode(_:)`` decodes at; `nil` when the header cannot be read
    /// (the decode then fails before allocating).
    func estimate(_ bytes: [UInt8]) -> DecodingEstimate? {
        try? ImageDecoder.memoryEstimate(for: bytes, options: options(for: bytes))
    }
}

extension ImageManager {
    /// Runs `processors` in order, stopping between them when the task is cancelled.
    static func process(_ image: Image, with processors: [any ImageProcessing]) throws(ImageError) -> Image {
        var image = image
        for processor in processors {
            guard !Task.isCancelled else { throw .cancelled }
            do {
                image = try processor.process(image)
            } catch is CancellationError {
                throw .cancelled
            } catch {
                throw .processingFailed(identifier: processor.identifier, error: error)
            }
        }
        return image
    }
}
