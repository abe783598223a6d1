internal import COspreyCodecShims
internal import COspreyGIF
internal import COspreyLibraryLoader
internal import COspreyPNG
internal import COspreyWebP

/// The C libraries `OspreyCodecs` is linked against, with their versions, for `osprey --version` and bug reports.
public enum CodecLibraries {
    /// One C library and its version.
    public struct Library: Sendable, Hashable {
        /// The library's name, e.g. `libjpeg-turbo`.
        public let name: String
        /// Its version as `major.minor.patch`.
        public let version: String
    }

    /// libjpeg-turbo, libpng, libwebp, giflib, then libavif, libheif and libjxl. libpng and libwebp report the version
    /// loaded at run time; libjpeg-turbo and giflib the version of the headers built against, as they have no run-time
    /// query; libavif, libheif and libjxl the version of the headers too, without opening them (they are opened when
    /// an image first needs one, and only with those headers' ABI).
    public static var all: [Library] {
        let jpeg = Int(osprey_jpeg_turbo_version_number())  // 2001005 for 2.1.5
        let png = Int(png_access_version_number())  // 10639 for 1.6.39
        let webp = Int(WebPGetDecoderVersion())  // 0x010204 for 1.2.4
        return [
            Library(name: "libjpeg-turbo", version: "\(jpeg / 1_000_000).\(jpeg / 1_000 % 1_000).\(jpeg % 1_000)"),
            Library(name: "libpng", version: "\(png / 10_000).\(png / 100 % 100).\(png % 100)"),
            Library(name: "libwebp", version: "\(webp >> 16).\((webp >> 8) & 0xFF).\(webp & 0xFF)"),
            Library(name: "giflib", version: "\(GIFLIB_MAJOR).\(GIFLIB_MINOR).\(GIFLIB_RELEASE)"),
            Library(name: "libavif", version: "\(AVIF_VERSION_MAJOR).\(AVIF_VERSION_MINOR).\(AVIF_VERSION_PATCH)"),
            Library(name: "libheif", version: LIBHEIF_VERSION),
            Library(
                name: "libjxl", version: "\(JPEGXL_MAJOR_VERSION).\(JPEGXL_MINOR_VERSION).\(JPEGXL_PATCH_VERSION)"),
        ]
    }
}
