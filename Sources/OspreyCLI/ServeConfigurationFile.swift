import ArgumentParser
import Configuration
import Foundation
import OspreyCodecs
import OspreyServer
import SystemPackage

/// `osprey serve --config FILE`: a JSON file of settings beside the flags and the `OSPREY_*` variables, read with
/// swift-configuration. Its keys are the flags' names (`"max-source-bytes": 1000000`, `"allow-hosts": ["*.a.com"]`);
/// each becomes the `OSPREY_*` variable of the same name, under the real environment: flags win over the
/// environment, which wins over the file, which wins over the defaults.
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
        "host": .string, "port": .integer, "cache-dir": .string, "secret": .list(separator: ","),
        "allow-unsigned": .flag, "allow-hosts": .list(separator: ","), "allow-private-networks": .flag,
        "allow-source-addresses": .list(separator: ","), "local-root": .string, "fallback-image": .string,
        "fallback-status": .integer, "watermark": .string, "presets": .list(separator: ";"), "presets-only": .flag,
        "auto-formats": .list(separator: ","), "max-source-bytes": .integer, "max-source-pixels": .integer,
        "max-output-pixels": .integer, "max-in-flight": .integer, "max-memory": .string,
        "max-memory-waiting": .integer, "cache-max-age": .integer, "otlp-endpoint": .string,
    ]

    /// The variable a key stands for.
    static func variable(_ key: String) -> String {
        "OSPREY_" + key.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// The file's settings as `OSPREY_*` variables.
    ///
    /// - Throws: `ValidationError` when the file cannot be read or parsed, holds a key that is not a setting (a typo
    ///   must not pass silently), or a value of the wrong kind.
    static func settings(fromFile path: String) async throws -> [String: String] {
        let provider: FileProvider<JSONSnapshot>
        do {
            provider = try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
        } catch {
            throw ValidationError("--config '\(path)' cannot be read as JSON: \(error)")
        }
        // The keys present, to refuse the unknown ones: the reader only answers for keys it is asked about.
        let data = FileManager.default.contents(atPath: path) ?? Data()
        let present = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?.keys.sorted() ?? []
        if let unknown = present.first(where: { keys[$0] == nil }) {
            throw ValidationError(
                "--config '\(path)': '\(unknown)' is not a setting (known: \(keys.keys.sorted().joined(separator: ", ")))"
            )
        }
        let reader = ConfigReader(provider: provider)
        var settings: [String: String] = [:]
        for key in present {
            let value: String?
            switch keys[key] {
            case .string: value = reader.string(forKey: ConfigKey(key), isSecret: key == "secret")
            case .integer: value = reader.int(forKey: ConfigKey(key)).map(String.init)
            case .flag: value = reader.bool(forKey: ConfigKey(key)).map { $0 ? "1" : "0" }
            case .list(let separator):
                value =
                    reader.stringArray(forKey: ConfigKey(key), isSecret: key == "secret")?.joined(separator: separator)
                    ?? reader.string(forKey: ConfigKey(key), isSecret: key == "secret")
            case nil: value = nil
            }
            guard let value else {
                throw ValidationError("--config '\(path)': '\(key)' does not have a value of its kind")
            }
            settings[variable(key)] = value
        }
        return settings
    }

    /// The effective configuration as `--print-config` shows it: one JSON object, keys sorted, the file's names,
    /// secrets masked.
    static func describe(_ configuration: ServerConfiguration, otlpEndpoint: String? = nil) -> String {
        var values: [String: Any] = [
            "host": configuration.host, "port": configuration.port, "cache-dir": configuration.cacheDirectory,
            "secret": configuration.secrets.map { _ in "********" },
            "allow-unsigned": configuration.allowsUnsigned,
            "allow-hosts": configuration.allowedHosts.map(\.description),
            "allow-private-networks": configuration.allowsPrivateNetworks,
            "allow-source-addresses": configuration.allowedSourceAddresses.map(\.description),
            "presets": configuration.presets.map { preset in
                preset.name + "=" + preset.parameters.map { "\($0.name):\($0.value)" }.joined(separator: ",")
            },
            "presets-only": configuration.presetsOnly,
            "auto-formats": configuration.autoFormats.map(\.name),
            "max-source-bytes": configuration.maxSourceBytes, "max-source-pixels": configuration.maxSourcePixels,
            "max-output-pixels": configuration.maxOutputPixels, "max-in-flight": configuration.maxInFlight,
            "max-memory-waiting": configuration.maxMemoryWaiting, "cache-max-age": configuration.cacheMaxAge,
        ]
        values["local-root"] = configuration.localRoot
        values["max-memory"] = configuration.maxMemory
        values["fallback-status"] = configuration.fallbackImage?.status
        values["fallback-image"] = configuration.fallbackImage.map { "\($0.bytes.count) bytes" }
        values["watermark"] = configuration.watermark.map { _ in "set" }
        values["otlp-endpoint"] = otlpEndpoint
        let data =
            (try? JSONSerialization.data(withJSONObject: values, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
