internal import COspreyLibraryLoader

/// The codecs' C libraries, each opened when a coder first needs it rather than when the process starts (the C
/// loader's header says why: every library mapped at start-up is paid for by every `osprey --version`, every
/// `osprey info` of a JPEG and every short-lived process). Each coder asks for its library's functions where it calls
/// them; a library that cannot be loaded fails the decode or encode with
/// ``CodecError/codecUnavailable(format:reason:)``, and is not tried again.
enum SharedLibraries {
    /// libavif's functions.
    static var avif: osprey_avif_functions {
        get throws(CodecError) { try avifLoad.get() }
    }

    /// libheif's functions (`heif_init` called).
    static var heif: osprey_heif_functions {
        get throws(CodecError) { try heifLoad.get() }
    }

    /// libjxl's functions.
    static var jxl: osprey_jxl_functions {
        get throws(CodecError) { try jxlLoad.get() }
    }

    /// libjpeg's functions (the shims call them; Swift only needs the library open).
    static var jpeg: osprey_jpeg_functions {
        get throws(CodecError) { try jpegLoad.get() }
    }

    /// TurboJPEG's functions.
    static var turbojpeg: osprey_turbojpeg_functions {
        get throws(CodecError) { try turbojpegLoad.get() }
    }

    /// libpng's functions (the shims call them; Swift only needs the library open).
    static var png: osprey_png_functions {
        get throws(CodecError) { try pngLoad.get() }
    }

    /// libwebp's functions.
    static var webp: osprey_webp_functions {
        get throws(CodecError) { try webpLoad.get() }
    }

    /// libwebpdemux's functions.
    static var webpDemux: osprey_webpdemux_functions {
        get throws(CodecError) { try webpDemuxLoad.get() }
    }

    /// libwebpmux's functions.
    static var webpMux: osprey_webpmux_functions {
        get throws(CodecError) { try webpMuxLoad.get() }
    }

    /// giflib's functions.
    static var gif: osprey_gif_functions {
        get throws(CodecError) { try gifLoad.get() }
    }

    /// libdeflate's functions.
    static var deflate: osprey_deflate_functions {
        get throws(CodecError) { try deflateLoad.get() }
    }

    // Swift's global and static constants are initialised once, on first use, thread-safely; the C loader is as well.
    private static let avifLoad = load(.avif) { osprey_avif_functions_load($0) }
    private static let heifLoad = load(.heic) { osprey_heif_functions_load($0) }
    private static let jxlLoad = load(.jxl) { osprey_jxl_functions_load($0) }
    private static let jpegLoad = load(.jpeg) { osprey_jpeg_functions_load($0) }
    private static let turbojpegLoad = load(.jpeg) { osprey_turbojpeg_functions_load($0) }
    private static let pngLoad = load(.png) { osprey_png_functions_load($0) }
    private static let webpLoad = load(.webp) { osprey_webp_functions_load($0) }
    private static let webpDemuxLoad = load(.webp) { osprey_webpdemux_functions_load($0) }
    private static let webpMuxLoad = load(.webp) { osprey_webpmux_functions_load($0) }
    private static let gifLoad = load(.gif) { osprey_gif_functions_load($0) }
    private static let deflateLoad = load(.png) { osprey_deflate_functions_load($0) }

    private static func load<Functions>(
        _ format: ImageFormat,
        _ loader: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> UnsafePointer<Functions>?
    ) -> Result<Functions, CodecError> {
        var reason: UnsafePointer<CChar>?
        guard let functions = loader(&reason) else {
            return .failure(.codecUnavailable(format: format, reason: reason.map { String(cString: $0) } ?? "unknown"))
        }
        return .success(functions.pointee)
    }
}

extension osprey_avif_functions {
    /// libavif's words for `result`.
    func describe(_ result: avifResult) -> String {
        avifResultToString(result).map { String(cString: $0) } ?? "libavif result \(result.rawValue)"
    }
}

// MARK: libwebp's inline functions
// libwebp's headers define these (named as in the headers in each comment) as inline functions over `…Internal` entry
// points that take the headers' ABI version: here they call the tables' entry points the same way.

extension osprey_webp_functions {
    /// `WebPGetFeatures`.
    func getFeatures(
        _ data: UnsafePointer<UInt8>?, _ size: Int, _ features: UnsafeMutablePointer<WebPBitstreamFeatures>
    ) -> VP8StatusCode {
        WebPGetFeaturesInternal(data, size, features, WEBP_DECODER_ABI_VERSION)
    }

    /// `WebPInitDecoderConfig`.
    func initDecoderConfig(_ config: UnsafeMutablePointer<WebPDecoderConfig>) -> Int32 {
        WebPInitDecoderConfigInternal(config, WEBP_DECODER_ABI_VERSION)
    }

    /// `WebPConfigInit` (the default preset at quality 75).
    func initConfig(_ config: UnsafeMutablePointer<WebPConfig>) -> Int32 {
        WebPConfigInitInternal(config, WEBP_PRESET_DEFAULT, 75, WEBP_ENCODER_ABI_VERSION)
    }

    /// `WebPPictureInit`.
    func initPicture(_ picture: UnsafeMutablePointer<WebPPicture>) -> Int32 {
        WebPPictureInitInternal(picture, WEBP_ENCODER_ABI_VERSION)
    }

    /// `WebPDataClear:` frees the bytes and empties `data`.
    func clear(_ data: UnsafeMutablePointer<WebPData>) {
        WebPFree(UnsafeMutableRawPointer(mutating: data.pointee.bytes))
        data.pointee = WebPData()
    }
}

extension osprey_webpdemux_functions {
    /// `WebPDemux` (a complete file, not a partial one).
    func demux(_ data: UnsafePointer<WebPData>) -> OpaquePointer? {
        WebPDemuxInternal(data, 0, nil, WEBP_DEMUX_ABI_VERSION)
    }

    /// `WebPAnimDecoderOptionsInit`.
    func initAnimDecoderOptions(_ options: UnsafeMutablePointer<WebPAnimDecoderOptions>) -> Int32 {
        WebPAnimDecoderOptionsInitInternal(options, WEBP_DEMUX_ABI_VERSION)
    }

    /// `WebPAnimDecoderNew`.
    func newAnimDecoder(
        _ data: UnsafePointer<WebPData>, _ options: UnsafePointer<WebPAnimDecoderOptions>?
    ) -> OpaquePointer? {
        WebPAnimDecoderNewInternal(data, options, WEBP_DEMUX_ABI_VERSION)
    }
}

extension osprey_webpmux_functions {
    /// `WebPAnimEncoderOptionsInit`.
    func initAnimEncoderOptions(_ options: UnsafeMutablePointer<WebPAnimEncoderOptions>) -> Int32 {
        WebPAnimEncoderOptionsInitInternal(options, WEBP_MUX_ABI_VERSION)
    }

    /// `WebPAnimEncoderNew`.
    func newAnimEncoder(
        _ width: Int32, _ height: Int32, _ options: UnsafePointer<WebPAnimEncoderOptions>?
    ) -> OpaquePointer? {
        WebPAnimEncoderNewInternal(width, height, options, WEBP_MUX_ABI_VERSION)
    }
}

/// CRC-32 as zlib and PNG define it (polynomial 0xEDB88320, reflected): libdeflate's, several GB/s, when libdeflate
/// can be opened; otherwise a table-driven loop, a byte at a time, that gives the same value.
package enum CRC32 {
    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let deflate = try? SharedLibraries.deflate else { return bytewise(bytes) }
        return UInt32(deflate.libdeflate_crc32(0, bytes.baseAddress, bytes.count))
    }

    /// The CRC-32 of `bytes` without libdeflate.
    package static func bytewise(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        bytes.reduce(~UInt32(0)) { crc, byte in table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) } ^ ~0
    }

    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// The byte-at-a-time table: entry `n` is the CRC of the byte `n`.
    private static let table: [UInt32] = (0..<256).map { entry in
        (0..<8).reduce(UInt32(entry)) { crc, _ in crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
}
