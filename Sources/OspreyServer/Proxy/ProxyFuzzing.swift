import Foundation
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
        _ = ImageProxy.autoFormat(for: accept, preferring: [.avif, .webp, .png])
        guard let parameters = try? RenderParameters(query: query, maxOutputPixels: maxOutputPixels) else { return }
        precondition((try? ImageRequest.validate(parameters.source)) != nil, "an invalid source passed")
        let sides = 1...RenderParameters.maximumSide
        precondition(parameters.width.map(sides.contains) ?? true, "w out of range")
        precondition(parameters.height.map(sides.contains) ?? true, "h out of range")
        if let width = parameters.width, let height = parameters.height {
            precondition(width * height <= maxOutputPixels, "w×h over the output limit")
        }
        precondition(parameters.quality.map((1...100).contains) ?? true, "q out of range")
        precondition(parameters.blur.map { $0.isFinite && (0.1...100).contains($0) } ?? true, "blur out of range")
        // Parsing the canonical form again gives the same canonical form: equal renders keep equal keys.
        let again = parameters.canonical.replacingOccurrences(of: "format=source", with: "")
            .split(separator: "&").filter { !$0.isEmpty }.joined(separator: "&")
        let url = parameters.source.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let reparsed = try? RenderParameters(query: again + "&url=" + url, maxOutputPixels: maxOutputPixels)
        precondition(reparsed?.canonical == parameters.canonical, "the canonical form does not parse to itself")
        if let signature = parameters.signature {
            _ = URLSigner(secret: Array("fuzz".utf8)).isValid(signature, path: "/img", parameters: parameters.pairs)
        }
    }
}
