import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine
import OspreyServer

extension CompatibilityOptions {
    /// Sets `configuration`'s imgproxy, thumbor and per-format quality settings from the flags, else `environment`.
    ///
    /// - Throws: `ValidationError` for a key or salt that is not hexadecimal, keys and salts that do not pair, a
    ///   preset or quality that does not parse, or both URL styles under one prefix.
    func apply(to configuration: inout ServerConfiguration, environment: [String: String]) throws {
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        func list(_ values: [String], _ name: String) -> [String] {
            (values.isEmpty ? env(name).map { [$0] } ?? [] : values)
                .flatMap { $0.split(separator: ",").map { $0.trimmingWhitespace() } }.filter { !$0.isEmpty }
        }
        if let path = imgproxyPath ?? env("OSPREY_IMGPROXY_PATH") {
            var imgproxy = ImgproxyConfiguration(path: try Self.prefix(path, flag: "--imgproxy-path"))
            let keys = list(imgproxyKeys, "OSPREY_IMGPROXY_KEY")
            let salts = list(imgproxySalts, "OSPREY_IMGPROXY_SALT")
            guard keys.count == salts.count else {
                throw ValidationError(
                    "give one --imgproxy-salt for each --imgproxy-key (\(keys.count) keys, \(salts.count) salts)")
            }
            for (key, salt) in zip(keys, salts) {
                do {
                    imgproxy.keys.append(try ImgproxyConfiguration.KeyPair(keyHex: key, saltHex: salt))
                } catch {
                    throw ValidationError(error.message)
                }
            }
            let sizeText = imgproxySignatureSize.map(String.init) ?? env("OSPREY_IMGPROXY_SIGNATURE_SIZE")
            if let sizeText {
                guard let size = DecimalText.integer(sizeText), (1...32).contains(size) else {
                    throw ValidationError("--imgproxy-signature-size must be from 1 to 32")
                }
                imgproxy.signatureSize = size
            }
            for text in list(imgproxyPresets, "OSPREY_IMGPROXY_PRESETS") {
                do {
                    let preset = try ImgproxyConfiguration.preset(parsing: text)
                    imgproxy.presets[preset.name] = preset.options
                } catch {
                    throw ValidationError(error.message)
                }
            }
            configuration.imgproxy = imgproxy
        }
        if let path = thumborPath ?? env("OSPREY_THUMBOR_PATH") {
            var thumbor = ThumborConfiguration(path: try Self.prefix(path, flag: "--thumbor-path"))
            let keys = thumborKeys.isEmpty ? env("OSPREY_THUMBOR_KEY").map { [$0] } ?? [] : thumborKeys
            thumbor.keys = keys.filter { !$0.isEmpty }.map { Array($0.utf8) }
            configuration.thumbor = thumbor
        }
        if let imgproxy = configuration.imgproxy, let thumbor = configuration.thumbor, imgproxy.path == thumbor.path {
            throw ValidationError("--imgproxy-path and --thumbor-path must differ (both are '\(imgproxy.path)')")
        }
        for item in list(formatQualities, "OSPREY_FORMAT_QUALITY") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let format = configuration.coders.encodableFormat(named: String(parts[0])),
                let quality = DecimalText.integer(parts[1]), (1...100).contains(quality)
            else { throw ValidationError("--format-quality '\(item)' is not FORMAT=QUALITY (1-100)") }
            configuration.formatQualities[format] = quality
        }
    }

    /// A path prefix as the flag gives it, normalised: `/`, or `/segment[/segment]` without a trailing slash.
    static func prefix(_ text: String, flag: String) throws -> String {
        let segments = text.split(separator: "/")
        guard
            segments.allSatisfy({ segment in
                segment.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
            }), !["img", "health", "ready", "metrics"].contains(segments.first.map(String.init) ?? "")
        else {
            throw ValidationError("\(flag) '\(text)' must be / or a path of letters, digits, - _ and . (not /img)")
        }
        return "/" + segments.joined(separator: "/")
    }
}
