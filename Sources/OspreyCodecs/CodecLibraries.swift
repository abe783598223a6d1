internal import COspreyCodecShims
internal import COspreyLibraryLoader

/// The C libraries `OspreyCodecs` runs on, with their versions, for `osprey --version` and bug reports.
public enum CodecLibraries {
    /// One C library and its version.
    public struct Library: Sendable, Hashable {
        /// The library's name, e.g. `libjpeg-turbo`.
        public let name: String
        /// Its version as `major.minor.patch`.
        public let version: String
    }

    /// libjpeg-turbo, libpng, libwebp, giflib, then libavif, libheif and libjxl. Each is opened only when an image
    /// first needs it (and accepted only with the ABI of the headers Osprey was built with), so the versions are the
    /// headers' — except libwebp's, whose headers carry none: libwebp is opened to ask it, and reported as
    /// "not available: <the reason>" when it cannot be.
    public static var all: [Library] {
        let jpeg = Int(osprey_jpeg_turbo_version_number())  // 2001005 for 2.1.5
        let webp: String
        do {
            let version = Int(try SharedLibraries.webp.WebPGetDecoderVersion())  // 0x010204 for 1.2.4
            webp = "\(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)"
        } catch .codecUnavailable(_, let reason) {
            webp = "not available: \(reason)"
        } catch {
            webp = "not available"
        }
        return [
            Library(name: "libjpeg-turbo", version: "\(jpeg / 1_000_000).\(jpeg / 1_000 % 1_000).\(jpeg % 1_000)"),
            Library(name: "libpng", version: PNG_LIBPNG_VER_STRING),
            Library(name: "libwebp", version: webp),
            Library(name: "giflib", version: "\(GIFLIB_MAJOR).\(GIFLIB_MINOR).\(GIFLIB_RELEASE)"),
            Library(name: "libavif", version: "\(AVIF_VERSION_MAJOR).\(AVIF_VERSION_MINOR).\(AVIF_VERSION_PATCH)"),
            Library(name: "libheif", version: LIBHEIF_VERSION),
            Library(
                name: "libjxl", version: "\(JPEGXL_MAJOR_VERSION).\(JPEGXL_MINOR_VERSION).\(JPEGXL_PATCH_VERSION)"),
        ]
    }
}
