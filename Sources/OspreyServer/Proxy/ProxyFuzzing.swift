import FoundationEssentials
import Osprey
import OspreyCodecs

/// Entry points for the libFuzzer harnesses in `Fuzz/` (not API): what a stranger's request reaches before any
/// network or pixel work — the query parser, the signature check and the `Accept` parser — run on arbitrary text,
/// with the promises a successful parse makes checked.
@_spi(Fuzzing) public enum ProxyFuzzing {
    /// Parses `query` as `/img`'s query (and checks a signature over it, and reads `accept` as an `Accept` header);
    /// stops the process when a parse that succeeded breaks a promise the pipeline relies on.
    public static func checkRequest(query: String, accept: String) {
        let maxOutputPixels = 4096 * 4096
        _ = ImageProxy.acceptedFormats(for: accept, preferring: [.avif, .webp, .png])
        // Two presets and a watermark, so that `p=` and `wm=` are parsed as a server with them parses them.
        let presets: [String: [(name: String, value: String)]] = [
            "thumb": [("w", "300"), ("h", "300"), ("fit", "cover")], "default": [("q", "70")],
        ]
        func parse(_ query: String) -> RenderParameters? {
            try? RenderParameters(
                query: query, maxOutputPixels: maxOutputPixels, presets: presets, hasWatermark: true)
        }
        guard let parameters = parse(query) else { return }
        precondition((try? ImageRequest.validate(parameters.source)) != nil, "an invalid source passed")
        let sides = 1...RenderParameters.maximumSide
        precondition(parameters.width.map(sides.contains) ?? true, "w out of range")
        precondition(parameters.height.map(sides.contains) ?? true, "h out of range")
        if let width = parameters.width, let height = parameters.height {
            precondition(width * height <= maxOutputPixels, "w×h over the output limit")
        }
        precondition(parameters.quality.map((1...100).contains) ?? true, "q out of range")
        precondition(parameters.blur.map { $0.isFinite && (0.1...100).contains($0) } ?? true, "blur out of range")
        precondition(parameters.sharpen.map { $0.isFinite && (0.1...10).contains($0) } ?? true, "sharpen out of range")
        precondition((0...3).contains(parameters.quarterTurns), "rot out of range")
        if let padding = parameters.padding {
            let sides = [padding.top, padding.right, padding.bottom, padding.left]
            precondition(sides.allSatisfy { $0 >= 0 && $0 <= RenderParameters.maximumPadding }, "pad out of range")
        }
        if case .rect(_, _, let width, let height) = parameters.crop {
            precondition(width >= 1 && height >= 1, "an empty crop")
        }
        precondition(!(parameters.extends && (parameters.width == nil || parameters.height == nil)), "extend unsized")
        // Parsing the canonical form again gives the same canonical form: equal renders keep equal keys.
        let again = parameters.canonical.replacing("format=source", with: "")
            .split(separator: "&").filter { !$0.isEmpty }.joined(separator: "&")
        let url = PercentEncoding.encodingAllButAlphanumerics(parameters.source.absoluteString)
        let reparsed = parse(again.replacing("#", with: "%23") + "&url=" + url)
        precondition(reparsed?.canonical == parameters.canonical, "the canonical form does not parse to itself")
        if let signature = parameters.signature {
            _ = URLSigner(secret: Array("fuzz".utf8)).isValid(signature, path: "/img", parameters: parameters.pairs)
        }
    }

    /// The server the URL-style harnesses parse for: imgproxy and thumbor URLs on, with a key each, a preset, and a
    /// watermark (so that `wm` is parsed as a server with one parses it).
    static let server: ServerConfiguration = {
        var configuration = ServerConfiguration()
        var imgproxy = ImgproxyConfiguration(path: "/")
        imgproxy.keys = [ImgproxyConfiguration.KeyPair(key: Array("key".utf8), salt: Array("salt".utf8))]
        imgproxy.presets = ["sharp": ["sharpen:0.7", "q:90"], "loop": ["pr:loop"]]
        configuration.imgproxy = imgproxy
        var thumbor = ThumborConfiguration(path: "/thumbor")
        thumbor.keys = [Array("key".utf8)]
        configuration.thumbor = thumbor
        return configuration
    }()

    /// Parses `path` as an imgproxy URL and checks its signature; stops the process when a parse that succeeded
    /// breaks a promise the pipeline relies on (a size out of range, an invalid source).
    public static func checkImgproxy(path: String) {
        guard let url = try? ImgproxyURL(path: path, configuration: server.imgproxy!, server: server) else { return }
        _ = url.isSigned(by: server.imgproxy!)
        checkParameters(url.parameters)
    }

    /// Parses `path` as a thumbor URL and checks its signature, as ``checkImgproxy(path:)`` does.
    public static func checkThumbor(path: String) {
        guard let url = try? ThumborURL(path: path, server: server) else { return }
        _ = url.isSigned(by: server.thumbor!.keys)
        checkParameters(url.parameters)
    }

    /// The promises every parse makes, whatever the style.
    static func checkParameters(_ parameters: RenderParameters) {
        precondition(
            parameters.localPath != nil || (try? ImageRequest.validate(parameters.source)) != nil,
            "an invalid source passed")
        let sides = 1...RenderParameters.maximumSide
        precondition(parameters.width.map(sides.contains) ?? true, "w out of range")
        precondition(parameters.height.map(sides.contains) ?? true, "h out of range")
        if let width = parameters.width, let height = parameters.height {
            precondition(width * height <= server.maxOutputPixels, "w×h over the output limit")
        }
        precondition(parameters.quality.map((1...100).contains) ?? true, "q out of range")
        precondition((0...3).contains(parameters.quarterTurns), "rot out of range")
        precondition(parameters.zoomX > 0 && parameters.zoomY > 0, "zoom not positive")
        if let padding = parameters.padding {
            let sides = [padding.top, padding.right, padding.bottom, padding.left]
            precondition(sides.allSatisfy { $0 >= 0 && $0 <= RenderParameters.maximumPadding }, "pad out of range")
        }
        // The processors can be made, and name themselves.
        _ = parameters.processors().map(\.identifier)
        _ = ImageProxy.output(parameters, accepted: [], configuration: server).identifier
    }
}
