internal import COspreyLibraryLoader

/// libavif, libheif and libjxl, opened when a coder first needs one rather than when the process starts (the C
/// loader's header says why: about 10 ms of every process's start-up). Each coder asks for its library's functions
/// where it calls them; a library that cannot be loaded fails the decode or encode with
/// ``CodecError/codecUnavailable(format:reason:)``, and is not tried again.
enum ModernCodecLibraries {
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

    // Swift's global and static constants are initialised once, on first use, thread-safely; the C loader is as well.
    private static let avifLoad = load(.avif) { osprey_avif_functions_load($0) }
    private static let heifLoad = load(.heic) { osprey_heif_functions_load($0) }
    private static let jxlLoad = load(.jxl) { osprey_jxl_functions_load($0) }

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
