import FoundationEssentials
import Osprey

/// The query of `GET /info`, validated: `url` (required; `local:///…` with a local root), `bh` (BlurHash components,
/// `X:Y`, each 1–9, 4:3 by default), `colors` (how many dominant colours, 1–16, 5 by default), `exp` and `sig`.
/// Anything else is refused.
struct InfoParameters {
    var source: URL
    /// The path below the local root, for a `local:///` source.
    var localPath: String?
    var blurComponents = (x: 4, y: 3)
    var colors = 5
    var expires: Int?
    var signature: String?
    /// The query's pairs as given, for the signature.
    var pairs: [(name: String, value: String)]

    static let known: Set<String> = ["url", "bh", "colors", "exp", "sig"]

    /// - Throws: ``ProxyError/badRequest(_:)`` naming the parameter at fault.
    init(query: String?, allowsLocalSources: Bool) throws(ProxyError) {
        pairs = try RenderParameters.decode(query ?? "")
        var values: [String: String] = [:]
        for (name, value) in pairs {
            guard Self.known.contains(name) else { throw .badRequest("unknown parameter '\(name)'") }
            guard values[name] == nil else { throw .badRequest("parameter '\(name)' given twice") }
            values[name] = value
        }
        guard let urlText = values["url"], !urlText.isEmpty else { throw .badRequest("missing parameter 'url'") }
        if allowsLocalSources, urlText.hasPrefix("local:///"), let url = URL(string: urlText) {
            source = url
            localPath = url.path(percentEncoded: false)
        } else {
            source = try RenderParameters.sourceURL(urlText)
        }
        if let text = values["bh"] {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { DecimalText.integer($0) }
            guard parts.count == 2, let x = parts[0], let y = parts[1], (1...9).contains(x), (1...9).contains(y) else {
                throw .badRequest("'bh' must be X:Y, each from 1 to 9")
            }
            blurComponents = (x, y)
        }
        colors = try RenderParameters.integer(values["colors"], name: "colors", in: 1...16) ?? 5
        expires = try RenderParameters.integer(values["exp"], name: "exp", in: 0...RenderParameters.latestExpiry)
        signature = values["sig"]
    }

    /// What the answer depends on besides the source's bytes.
    var variant: String { "bh=\(blurComponents.x):\(blurComponents.y)&colors=\(colors)" }
}
