public import OspreyCodecs

extension ImageProcessors {
    /// A resize that starts in the decoder: a JPEG is decoded DCT-scaled by 1/8 to 8/8 and a WebP still
    /// scaled by any factor, to the smallest size that still covers the output, and ``Resize`` finishes the job. A
    /// 4000 × 3000 JPEG made into a 256-pixel thumbnail is decoded at 500 × 375: one sixty-fourth of the pixels.
    ///
    /// It is a ``DecodingSizeHint``: a request whose first processor it is decodes at ``decodingSize(for:)``, read
    /// from the header. Other formats decode at full size. Called directly:
    ///
    /// ```swift
    /// let thumbnail = ImageProcessors.Downsample(width: 256, height: 256)
    /// let image = try thumbnail.process(try thumbnail.decode(data))
    /// ```
    public struct Downsample: ImageProcessing, Hashable {
        /// The resize that finishes the job, and whose box decides the decoding size.
        public var resize: Resize

        /// Makes a downsample whose finishing resize has these parameters (see
        /// ``Resize/init(width:height:fit:anchor:filter:upscale:reducingGap:minWidth:minHeight:zoomX:zoomY:offsetX:offsetY:)``).
        public init(
            width: Int? = nil, height: Int? = nil, fit: Resize.Fit = .inside, anchor: Anchor = .center,
            filter: ResamplingFilter = .lanczos3, upscale: Bool = false, reducingGap: Double? = 2
        ) {
            resize = Resize(
                width: width, height: height, fit: fit, anchor: anchor, filter: filter, upscale: upscale,
                reducingGap: reducingGap)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "downsample" + resize.identifier.dropFirst("resize".count) }

        /// Resizes an image, decoded at ``decodingSize(for:)`` or at full size.
        public func process(_ image: Image) throws -> Image {
            try resize.process(image)
        }

        /// The size to ask the decoder for (`DecodingOptions.targetSize`, in display orientation) so that what it
        /// returns still covers the output; `nil` when the image would not be made smaller.
        ///
        /// - Throws: ``ImageProcessingError`` for a resize without a valid size.
        public func decodingSize(for header: ImageHeader) throws -> ImageSize? {
            let source = header.displaySize
            guard let plan = try resize.plan(sourceWidth: source.width, sourceHeight: source.height) else { return nil }
            // The scale from source to output on each axis; the decoder scales both axes alike, so the whole image
            // at the larger of the two scales covers the output.
            let scale = max(Double(plan.width) / plan.rect.width, Double(plan.height) / plan.rect.height)
            guard scale < 1 else { return nil }
            return ImageSize(
                width: Int((Double(source.width) * scale).rounded(.up)),
                height: Int((Double(source.height) * scale).rounded(.up)))
        }

        /// Decodes `data` at ``decodingSize(for:)`` (unless `options` set a target size of their own), with `options`
        /// otherwise; a header that cannot be read, or a resize without a valid size, decodes at full size (the
        /// error then comes from the decoder or from ``process(_:)``).
        ///
        /// - Throws: `CodecError` when the data does not decode.
        public func decode(_ data: [UInt8], options: DecodingOptions = DecodingOptions()) throws(CodecError) -> Image {
            try ImageDecoder.decode(data, options: decodingOptions(for: data, options: options))
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.Downsample {
    /// Resizes, decoding JPEG and WebP scaled down first (see ``ImageProcessors/Downsample``).
    public static func downsample(
        width: Int? = nil, height: Int? = nil, fit: ImageProcessors.Resize.Fit = .inside, anchor: Anchor = .center,
        filter: ResamplingFilter = .lanczos3, upscale: Bool = false, reducingGap: Double? = 2
    ) -> Self {
        ImageProcessors.Downsample(
            width: width, height: height, fit: fit, anchor: anchor, filter: filter, upscale: upscale,
            reducingGap: reducingGap)
    }
}
