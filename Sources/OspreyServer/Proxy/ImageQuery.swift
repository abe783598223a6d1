public import OspreyCodecs

/// Why an `/img` query or a preset is refused: the message the server answers 400 with, naming the parameter.
public struct InvalidImageQuery: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String

    /// An error saying `message`.
    public init(message: String) {
        self.message = message
    }

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String { message }
}

/// A named set of `/img` parameters (imgproxy's presets): `p=thumb` in a request applies them, and the request's
/// own parameters override them. `osprey serve --preset 'thumb=w:300,h:300,fit:cover,q:75'`.
///
/// A preset named `default` applies to every request, before the ones it names. Presets cannot set `url`, `p`,
/// `exp` or `sig`.
public struct ImagePreset: Sendable {
    /// Its name: letters, digits, `-` and `_`.
    public let name: String
    /// Its parameters, in order (a later one of the same name wins).
    public let parameters: [(name: String, value: String)]

    /// A preset `name` setting `parameters`, checked as the server checks a query.
    ///
    /// - Throws: ``InvalidImageQuery`` for a bad name, a parameter a preset cannot set, or a value out of range.
    public init(name: String, parameters: [(name: String, value: String)]) throws(InvalidImageQuery) {
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { throw InvalidImageQuery(message: "'\(name)' is not a preset name: use letters, digits, - and _") }
        for parameter in parameters where RenderParameters.notInPresets.contains(parameter.name) {
            throw InvalidImageQuery(message: "preset '\(name)' cannot set '\(parameter.name)'")
        }
        self.name = name
        self.parameters = parameters
        // Its values are checked as a request's would be, on a source that surely passes.
        try ImageQuery.check([("url", "https://example.com/preset.jpg")] + parameters)
    }

    /// A preset from its specification `NAME=key:value,key:value`: `thumb=w:300,h:300,fit:cover,q:75`.
    ///
    /// - Throws: ``InvalidImageQuery`` when it is not of that form or does not check.
    public init(parsing specification: String) throws(InvalidImageQuery) {
        guard let equals = specification.firstIndex(of: "=") else {
            throw InvalidImageQuery(message: "preset '\(specification)' is not NAME=key:value,...")
        }
        var parameters: [(name: String, value: String)] = []
        for item in specification[specification.index(after: equals)...].split(separator: ",") {
            let parts = item.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw InvalidImageQuery(message: "'\(item)' in preset '\(specification)' is not key:value")
            }
            parameters.append((String(parts[0]), String(parts[1])))
        }
        try self.init(name: String(specification[..<equals]), parameters: parameters)
    }
}

/// Checks `/img` queries before they are signed or served.
public enum ImageQuery {
    /// Checks `parameters` as `osprey serve` checks an `/img` query (the names it knows, their ranges, a loadable
    /// `url`, the presets named), so that nothing is signed that the server would refuse anyway; `sig` is ignored.
    ///
    /// - Throws: ``InvalidImageQuery`` with the server's message.
    public static func check(
        _ parameters: [(name: String, value: String)], presets: [ImagePreset] = [], presetsOnly: Bool = false,
        maxOutputPixels: Int = ServerConfiguration().maxOutputPixels, coders: ImageCoderRegistry = .shared
    ) throws(InvalidImageQuery) {
        let query = parameters.map { URLSigner.escape($0.name) + "=" + URLSigner.escape($0.value) }
            .joined(separator: "&")
        do throws(ProxyError) {
            _ = try RenderParameters(
                query: query, maxOutputPixels: maxOutputPixels, coders: coders,
                presets: RenderParameters.presetTable(presets), presetsOnly: presetsOnly)
        } catch {
            throw InvalidImageQuery(message: error.message)
        }
    }
}

extension ImageQuery {
    /// Checks `parameters` as `osprey serve` checks an `/info` query (`url`, `bh`, `colors`, `exp`; `sig` ignored).
    ///
    /// - Throws: ``InvalidImageQuery`` with the server's message.
    public static func checkInfo(_ parameters: [(name: String, value: String)]) throws(InvalidImageQuery) {
        let query = parameters.map { URLSigner.escape($0.name) + "=" + URLSigner.escape($0.value) }
            .joined(separator: "&")
        do throws(ProxyError) {
            _ = try InfoParameters(query: query, allowsLocalSources: false)
        } catch {
            throw InvalidImageQuery(message: error.message)
        }
    }
}
