import OspreyTesting
import Testing

@testable import OspreyCodecs

/// The decoders' own checkpoints, reached past ``ImageDecoder``'s check before it starts: a cancellation set before
/// the first checkpoint stops the decode there.
@Suite struct DecodingCancellationTests {
    static func options(cancelled: Bool, partial: Bool = false) -> DecodingOptions {
        var options = DecodingOptions()
        options.allowsPartialImages = partial
        options.cancellation = DecodingCancellation()
        if cancelled { options.cancellation?.cancel() }
        return options
    }

    static func jpeg(_ data: [UInt8], _ options: DecodingOptions) -> Result<Image, CodecError> {
        data.withUnsafeBytes { bytes in
            Result { () throws(CodecError) in try JPEGDecoder.decode(bytes, options: options) }
        }
    }

    static func libpng(_ data: [UInt8], _ options: DecodingOptions) -> Result<Image, CodecError> {
        data.withUnsafeBytes { bytes in
            Result { () throws(CodecError) in
                try PNGDecoder.decodeReportingPath(bytes, options: options, usesLibpngOnly: true).image
            }
        }
    }

    @Test("libjpeg's progress checkpoints stop a baseline and a progressive decode", arguments: [false, true])
    func jpeg(progressive: Bool) throws {
        let image = try ImageDecoder.decode(SyntheticImages.png(width: 64, height: 48))
        var encoding = EncodingOptions()
        encoding.isProgressive = progressive
        let jpeg = try ImageEncoder.encode(image, as: .jpeg, options: encoding)
        #expect(Self.jpeg(jpeg, Self.options(cancelled: true)).error == .cancelled)
        #expect(try Self.jpeg(jpeg, Self.options(cancelled: false)).get().width == 64)
    }

    @Test("libpng's row loop stops a decode, which keeps no partial image even when partial images are allowed")
    func png() throws {
        let png = SyntheticImages.png(width: 64, height: 48)
        #expect(Self.libpng(png, Self.options(cancelled: true, partial: true)).error == .cancelled)
        #expect(try Self.libpng(png, Self.options(cancelled: false)).get().width == 64)
    }
}

extension Result {
    /// The failure's error, `nil` on success.
    fileprivate var error: Failure? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}
