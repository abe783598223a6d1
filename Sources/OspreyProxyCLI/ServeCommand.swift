import ArgumentParser
import FoundationEssentials
import Logging
import Osprey
import OspreyCodecs
import OspreyCommandLine
import OspreyServer
import ServiceLifecycle

/// `osprey serve`: the image proxy (docs/serve.md).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = ServeOptions.configuration

    @OptionGroup var options: ServeOptions

    func run() async throws {
        var environment = ProcessInfo.processInfo.environment
        if let path = options.config ?? environment["OSPREY_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 }) {
            environment = try await ServeConfigurationFile.settings(fromFile: path).merging(environment) { $1 }
        }
        var configuration = try options.serverConfiguration(environment: environment)
        let otlpEndpoint = options.otlpEndpoint ?? environment["OSPREY_OTLP_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 }
        if let otlpEndpoint { try TraceExport.validate(otlpEndpoint) }
        if options.printConfig {
            print(ServeConfigurationFile.describe(configuration, otlpEndpoint: otlpEndpoint))
            return
        }
        var logger = Logger(label: "osprey.serve")
        logger.logLevel = options.verbose ? .debug : .info
        if let logLevel = options.logLevel {
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw ValidationError("'\(logLevel)' is not a log level")
            }
            logger.logLevel = level
        }
        if configuration.secrets.isEmpty {
            logger.warning("no secret: serving unsigned requests only (--allow-unsigned)")
        }
        var services: [any Service] = []
        if let otlpEndpoint {
            let export = try TraceExport(endpoint: otlpEndpoint, logger: logger)
            configuration.tracer = export.tracer
            services.append(export.service)
            logger.info("exporting traces", metadata: ["endpoint": "\(export.url)"])
        }
        try await runServer(configuration: configuration, logger: logger, services: services)
    }
}

extension ServeOptions {
    /// The configuration the flags, then `environment`, then the defaults give.
    func serverConfiguration(environment: [String: String]) throws -> ServerConfiguration {
        func env(_ name: String) -> String? {
            environment[name].flatMap { $0.isEmpty ? nil : $0 }
        }
        func flag(_ value: Bool, _ name: String) -> Bool {
            value || ["1", "true", "yes"].contains(env(name)?.lowercased() ?? "")
        }
        func list(_ values: [String], _ name: String) -> [String] {
            values.isEmpty
                ? (env(name)?.split(separator: ",").map { $0.trimmingWhitespace() } ?? []) : values
        }
        func number(_ value: Int?, _ name: String, minimum: Int) throws -> Int? {
            guard
                let value = try value
                    ?? env(name).map({ text in
                        guard let number = DecimalText.integer(text) else {
                            throw ValidationError("\(name) must be an integer, not '\(text)'")
                        }
                        return number
                    })
            else { return nil }
            guard value >= minimum else { throw ValidationError("\(name.lowercased()) must be at least \(minimum)") }
            return value
        }

        var configuration = ServerConfiguration()
        configuration.host = host ?? env("OSPREY_HOST") ?? configuration.host
        if let port = try number(port, "OSPREY_PORT", minimum: 0) {
            guard port <= 65535 else { throw ValidationError("the port must be at most 65535") }
            configuration.port = port
        }
        configuration.cacheDirectory = cacheDirectory.resolved(environment: environment)
        configuration.certificateAuthorities = try certificateAuthority.resolved(environment: environment)
        configuration.httpVersion = flag(http2, "OSPREY_HTTP2") ? .automatic : .http1Only
        do {
            let proxies = try EgressProxies(environment: environment)
            configuration.proxies = proxies.isEmpty ? nil : proxies
        } catch {
            throw ValidationError(error.description)
        }
        configuration.secrets = Self.secrets(flags: secrets, environment: environment)
        configuration.allowsUnsigned = flag(allowUnsigned, "OSPREY_ALLOW_UNSIGNED")
        try compatibility.apply(to: &configuration, environment: environment)
        let otherKeys =
            !(configuration.imgproxy?.keys.isEmpty ?? true) || !(configuration.thumbor?.keys.isEmpty ?? true)
        if configuration.secrets.isEmpty, !configuration.allowsUnsigned, !otherKeys {
            throw ValidationError("give a secret (--secret or OSPREY_SECRET), or serve unsigned with --allow-unsigned")
        }
        do {
            configuration.presets = try Self.presets(flags: presetSpecifications, environment: environment)
        } catch {
            throw ValidationError(error.message)
        }
        configuration.presetsOnly = flag(presetsOnly, "OSPREY_PRESETS_ONLY")
        if configuration.presetsOnly, configuration.presets.isEmpty {
            throw ValidationError("--presets-only needs presets (--preset NAME=key:value,...)")
        }
        configuration.allowedHosts = try list(allowedHosts, "OSPREY_ALLOW_HOSTS").map { text in
            guard let pattern = HostPattern(text) else { throw ValidationError("'\(text)' is not a host pattern") }
            return pattern
        }
        configuration.allowsPrivateNetworks = flag(allowPrivateNetworks, "OSPREY_ALLOW_PRIVATE_NETWORKS")
        configuration.infoIncludesGPS = flag(infoGPS, "OSPREY_INFO_GPS")
        let step = try number(clientHintsStep, "OSPREY_CLIENT_HINTS_STEP", minimum: 1)
        let saveData = try number(saveDataQuality, "OSPREY_SAVE_DATA_QUALITY", minimum: 1)
        if flag(clientHints, "OSPREY_CLIENT_HINTS") {
            if let saveData, saveData > 100 { throw ValidationError("osprey_save_data_quality must be at most 100") }
            configuration.clientHints = ClientHintsConfiguration(
                widthStep: min(step ?? 100, 16384), saveDataQuality: saveData ?? 50)
        } else if step != nil || saveData != nil {
            throw ValidationError("--client-hints-step and --save-data-quality need --client-hints")
        }
        if let root = localRoot ?? env("OSPREY_LOCAL_ROOT") {
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory else {
                throw ValidationError("--local-root '\(root)' is not a directory")
            }
            configuration.localRoot = root
        }
        // The image file `flag` names, at most a source's size.
        func image(_ flag: String, at path: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: path), data.count <= configuration.maxSourceBytes
            else { throw ValidationError("\(flag) '\(path)' cannot be read (or is larger than the source limit)") }
            return Array(data)
        }
        if let path = watermark ?? env("OSPREY_WATERMARK") {
            let bytes = try image("--watermark", at: path)
            do {
                configuration.watermark = try WatermarkImage(bytes: bytes)
            } catch {
                throw ValidationError(error.message)
            }
        }
        let fallbackPath = fallbackImage ?? env("OSPREY_FALLBACK_IMAGE")
        if fallbackPath == nil, fallbackStatus != nil || env("OSPREY_FALLBACK_STATUS") != nil {
            throw ValidationError("--fallback-status needs --fallback-image")
        }
        if let path = fallbackPath {
            let bytes = try image("--fallback-image", at: path)
            let status = try number(fallbackStatus, "OSPREY_FALLBACK_STATUS", minimum: 100) ?? 200
            do {
                configuration.fallbackImage = try FallbackImage(bytes: bytes, status: status)
            } catch {
                throw ValidationError(error.message)
            }
        }
        configuration.allowedSourceAddresses = try list(allowedSourceAddresses, "OSPREY_ALLOW_SOURCE_ADDRESSES").map {
            text in
            guard let address = SourceAddress(text) else { throw ValidationError("'\(text)' is not an IP address") }
            return address
        }
        let autoFormatNames = list(autoFormats, "OSPREY_AUTO_FORMATS").flatMap {
            $0.split(separator: ",").map { $0.trimmingWhitespace() }
        }
        // `best` among them: format=auto keeps the smallest of those the client accepts, as format=best does.
        configuration.autoFormatIsBest = autoFormatNames.contains("best")
        if autoFormatNames.contains(where: { $0 != "best" }) {
            configuration.autoFormats = try autoFormatNames.filter { $0 != "best" }.map { name in
                guard let format = configuration.coders.encodableFormat(named: name) else {
                    let names = configuration.coders.encodableFormats.map(\.name).joined(separator: ", ")
                    throw ValidationError("--auto-format '\(name)' is not a format osprey writes (\(names))")
                }
                return format
            }
        }
        if let value = try number(maxSourceBytes, "OSPREY_MAX_SOURCE_BYTES", minimum: 1) {
            configuration.maxSourceBytes = value
        }
        if let value = try number(maxSourcePixels, "OSPREY_MAX_SOURCE_PIXELS", minimum: 1) {
            configuration.maxSourcePixels = value
        }
        if let value = try number(maxOutputPixels, "OSPREY_MAX_OUTPUT_PIXELS", minimum: 1) {
            configuration.maxOutputPixels = value
        }
        if let value = try number(maxEffort, "OSPREY_MAX_EFFORT", minimum: 1) {
            guard value <= 9 else { throw ValidationError("--max-effort must be between 1 and 9") }
            configuration.maxEffort = value
        }
        if let value = try number(maxInFlight, "OSPREY_MAX_IN_FLIGHT", minimum: 1) {
            configuration.maxInFlight = value
        }
        configuration.connectionsPerOrigin = try number(
            maxConnectionsPerOrigin, "OSPREY_MAX_CONNECTIONS_PER_ORIGIN", minimum: 1)
        if let text = maxMemory ?? env("OSPREY_MAX_MEMORY") {
            guard let bytes = ByteSize.parse(text) else {
                throw ValidationError("--max-memory '\(text)' is not a size: give bytes, 512M, 2G or 60%")
            }
            configuration.maxMemory = bytes
        }
        if let value = try number(maxMemoryWaiting, "OSPREY_MAX_MEMORY_WAITING", minimum: 0) {
            configuration.maxMemoryWaiting = value
        }
        if let value = try number(cacheMaxAge, "OSPREY_CACHE_MAX_AGE", minimum: 0) {
            configuration.cacheMaxAge = value
        }
        return configuration
    }

    /// The presets: the `--preset` flags, else `OSPREY_PRESETS` split at semicolons (a preset has commas in it).
    ///
    /// - Throws: ``InvalidImageQuery`` for one that does not parse or check, or a name given twice.
    static func presets(flags: [String], environment: [String: String]) throws(InvalidImageQuery) -> [ImagePreset] {
        let texts = flags.isEmpty ? (environment["OSPREY_PRESETS"] ?? "").split(separator: ";").map(String.init) : flags
        var presets: [ImagePreset] = []
        for text in texts where !text.trimmingWhitespace().isEmpty {
            let preset = try ImagePreset(parsing: text.trimmingWhitespace())
            guard !presets.contains(where: { $0.name == preset.name }) else {
                throw InvalidImageQuery(message: "preset '\(preset.name)' is given twice")
            }
            presets.append(preset)
        }
        return presets
    }

    /// The signing secrets: the `--secret` flags, else `OSPREY_SECRET` split at commas (a secret from
    /// `openssl rand -hex 32` has none); empty ones left out.
    static func secrets(flags: [String], environment: [String: String]) -> [[UInt8]] {
        let texts = flags.isEmpty ? (environment["OSPREY_SECRET"] ?? "").split(separator: ",").map(String.init) : flags
        return texts.filter { !$0.isEmpty }.map { Array($0.utf8) }
    }
}
