import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `osprey serve --config FILE`: a JSON file of settings beside the flags and the `OSPREY_*` variables. Its keys are
/// the flags' names (`"max-source-bytes": 1000000`, `"allow-hosts": ["*.a.com"]`); each becomes the `OSPREY_*`
/// variable of the same name, under the real environment: flags win over the environment, which wins over the file,
/// which wins over the defaults. Read with `JSONDecoder` (FoundationEssentials), each value checked against its key's
/// kind.
enum ServeConfigurationFile {
    /// How a key's value reads: a string, a number, a switch, or a list joined as its variable separates it.
    enum Kind {
        case string
        case integer
        case flag
        case list(separator: String)
    }

    /// Every key the file may hold, with its kind; the variable is `OSPREY_` and the key in upper case with `_`.
    static let keys: [String: Kind] = [
        "host": .string, "port": .integer, "cache-dir": .string, "ca-file": .string, "http2": .flag,
        "secret": .list(separator: ","),
        "allow-unsigned": .flag, "allow-hosts": .list(separator: ","), "allow-private-networks": .flag,
        "allow-source-addresses": .list(separator: ","), "local-root": .string, "fallback-image": .string,
        "fallback-status": .integer, "watermark": .string, "presets": .list(separator: ";"), "presets-only": .flag,
        "auto-formats": .list(separator: ","), "max-source-bytes": .integer, "max-source-pixels": .integer,
        "max-output-pixels": .integer, "max-effort": .integer, "max-in-flight": .integer,
        "max-connections-per-origin": .integer, "max-memory": .string,
        "max-memory-waiting": .integer, "cache-max-age": .integer, "otlp-endpoint": .string,
        "imgproxy-path": .string, "imgproxy-key": .list(separator: ","), "imgproxy-salt": .list(separator: ","),
        "imgproxy-signature-size": .integer, "imgproxy-presets": .list(separator: ","), "thumbor-path": .string,
        "thumbor-key": .string, "format-quality": .list(separator: ","), "info-gps": .flag,
        "client-hints": .flag, "client-hints-step": .integer, "save-data-quality": .integer,
    ]

    /// The variable a key stands for.
    static func variable(_ key: String) -> String {
        "OSPREY_" + key.uppercased().replacing("-", with: "_")
    }

    /// The file's settings as `OSPREY_*` variables.
    ///
    /// - Throws: `ValidationError` when the file cannot be read or parsed, holds a key that is not a setting (a typo
    ///   must not pass silently), or a value of the wrong kind.
    static func settings(fromFile path: String) async throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--config '\(path)' cannot be read: \(String(cString: strerror(errno)))")
        }
        let values: [String: Value]
        do {
            values = try JSONDecoder().decode([String: Value].self, from: data)
        } catch {
            throw ValidationError("--config '\(path)' cannot be read as JSON: \(error)")
        }
        if let unknown = values.keys.sorted().first(where: { keys[$0] == nil }) {
            throw ValidationError(
                "--config '\(path)': '\(unknown)' is not a setting (known: \(keys.keys.sorted().joined(separator: ", ")))"
            )
        }
        var settings: [String: String] = [:]
        for (key, value) in values {
            let setting: String? =
                switch (keys[key], value) {
                case (.string, .string(let text)): text
                case (.integer, .integer(let number)): String(number)
                case (.flag, .flag(let on)): on ? "1" : "0"
                case (.list(let separator), .list(let items)): items.joined(separator: separator)
                case (.list, .string(let text)): text
                default: nil
                }
            guard let setting else {
                throw ValidationError("--config '\(path)': '\(key)' does not have a value of its kind")
            }
            settings[variable(key)] = setting
        }
        return settings
    }

    /// The effective configuration as `--print-config` shows it: one JSON object, keys sorted, the file's names,
    /// secrets masked.
    static func describe(_ configuration: ServerConfiguration, otlpEndpoint: String? = nil) -> String {
        var values: [String: Value] = [
            "host": .string(configuration.host), "port": .integer(configuration.port),
            "cache-dir": .string(configuration.cacheDirectory),
            "http2": .flag(configuration.httpVersion == .automatic),
            "secret": .list(configuration.secrets.map { _ in "********" }),
            "allow-unsigned": .flag(configuration.allowsUnsigned),
            "allow-hosts": .list(configuration.allowedHosts.map(\.description)),
            "allow-private-networks": .flag(configuration.allowsPrivateNetworks),
            "info-gps": .flag(configuration.infoIncludesGPS),
            "client-hints": .flag(configuration.clientHints != nil),
            "allow-source-addresses": .list(configuration.allowedSourceAddresses.map(\.description)),
            "presets": .list(
                configuration.presets.map { preset in
                    preset.name + "=" + preset.parameters.map { "\($0.name):\($0.value)" }.joined(separator: ",")
                }),
            "presets-only": .flag(configuration.presetsOnly),
            "auto-formats": .list(
                configuration.autoFormats.map(\.name) + (configuration.autoFormatIsBest ? ["best"] : [])),
            "max-source-bytes": .integer(configuration.maxSourceBytes),
            "max-source-pixels": .integer(configuration.maxSourcePixels),
            "max-output-pixels": .integer(configuration.maxOutputPixels),
            "max-effort": .integer(configuration.maxEffort),
            "max-in-flight": .integer(configuration.maxInFlight),
            "max-memory-waiting": .integer(configuration.maxMemoryWaiting),
            "cache-max-age": .integer(configuration.cacheMaxAge),
        ]
        values["local-root"] = configuration.localRoot.map(Value.string)
        values["max-memory"] = configuration.maxMemory.map(Value.integer)
        values["max-connections-per-origin"] = configuration.connectionsPerOrigin.map(Value.integer)
        values["fallback-status"] = configuration.fallbackImage.map { .integer($0.status) }
        values["fallback-image"] = configuration.fallbackImage.map { .string("\($0.bytes.count) bytes") }
        values["watermark"] = configuration.watermark.map { _ in .string("set") }
        values["otlp-endpoint"] = otlpEndpoint.map(Value.string)
        if let imgproxy = configuration.imgproxy {
            values["imgproxy-path"] = .string(imgproxy.path)
            values["imgproxy-key"] = .list(imgproxy.keys.map { _ in "********" })
            values["imgproxy-salt"] = .list(imgproxy.keys.map { _ in "********" })
            values["imgproxy-signature-size"] = .integer(imgproxy.signatureSize)
            values["imgproxy-presets"] = .list(
                imgproxy.presets.keys.sorted().map { "\($0)=" + imgproxy.presets[$0]!.joined(separator: "/") })
        }
        if let hints = configuration.clientHints {
            values["client-hints-step"] = .integer(hints.widthStep)
            values["save-data-quality"] = .integer(hints.saveDataQuality)
        }
        if let thumbor = configuration.thumbor {
            values["thumbor-path"] = .string(thumbor.path)
            values["thumbor-key"] = thumbor.keys.isEmpty ? nil : .string("********")
        }
        if !configuration.formatQualities.isEmpty {
            values["format-quality"] = .list(
                configuration.formatQualities.map { "\($0.key.name)=\($0.value)" }.sorted())
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = (try? encoder.encode(values)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// A value in the file, or one `--print-config` shows.
    enum Value: Codable {
        case string(String)
        case integer(Int)
        case flag(Bool)
        case list([String])
        /// Anything else JSON can hold (a fraction, an object, null, a list of non-strings): no setting's kind.
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let on = try? container.decode(Bool.self) {
                self = .flag(on)
            } else if let number = try? container.decode(Int.self) {
                self = .integer(number)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else if let items = try? container.decode([String].self) {
                self = .list(items)
            } else {
                self = .other
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .integer(let number): try container.encode(number)
            case .flag(let on): try container.encode(on)
            case .list(let items): try container.encode(items)
            case .other: try container.encodeNil()
            }
        }
    }
}
