import ArgumentParser
import FoundationEssentials
import Logging
import Osprey
import OspreyCodecs
import OspreyServer
import ServiceLifecycle

/// `osprey serve`: the image proxy (docs/serve.md).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the image proxy: GET /img?url=...&w=...&h=... resized, converted, cached.",
        discussion: """
            Every flag also reads an OSPREY_* variable (the flag wins): OSPREY_HOST, OSPREY_PORT, OSPREY_CACHE_DIR, \
            OSPREY_SECRET (comma-separated for several), OSPREY_ALLOW_UNSIGNED=1, OSPREY_PRESETS (semicolon-separated), \
            OSPREY_PRESETS_ONLY=1, OSPREY_ALLOW_HOSTS (comma-separated), \
            OSPREY_ALLOW_PRIVATE_NETWORKS=1, OSPREY_ALLOW_SOURCE_ADDRESSES (comma-separated), OSPREY_LOCAL_ROOT, \
            OSPREY_FALLBACK_IMAGE, OSPREY_FALLBACK_STATUS, OSPREY_WATERMARK, \
            OSPREY_MAX_SOURCE_BYTES, OSPREY_MAX_SOURCE_PIXELS, OSPREY_MAX_OUTPUT_PIXELS, OSPREY_MAX_IN_FLIGHT, \
            OSPREY_MAX_MEMORY, OSPREY_MAX_MEMORY_WAITING, OSPREY_CACHE_MAX_AGE, OSPREY_OTLP_ENDPOINT; and a --config file (JSON, keys named \
            as the flags) under them: flags, then variables, then the file, then the defaults. Requests must be signed (HMAC-SHA256, see docs/serve.md) unless --allow-unsigned.
            SIGTERM or SIGINT stops accepting, lets requests in flight finish, and exits 0.

            Examples:
              OSPREY_SECRET=$(openssl rand -hex 32) osprey serve --port 8080
              osprey serve --allow-unsigned --allow-host '*.example.com'
              curl 'http://127.0.0.1:8080/img?url=https%3A%2F%2Fexample.com%2Fcat.jpg&w=300'
            """
    )

    @Option(help: "Address to listen on (default: 127.0.0.1; 0.0.0.0 for every interface).")
    var host: String?

    @Option(help: "Port to listen on (default: 8080; 0 picks a free one).")
    var port: Int?

    @OptionGroup var cacheDirectory: CacheDirectoryOption

    @Option(
        name: .customLong("secret"),
        help: """
            A signing secret (default: $OSPREY_SECRET, comma-separated). Repeatable: the first signs, every one \
            verifies, for rotating keys. Prefer the variable: flags show in ps.
            """)
    var secrets: [String] = []

    @Flag(help: "Serve unsigned requests too (signed ones are still checked).")
    var allowUnsigned = false

    @Option(
        name: .customLong("preset"),
        help: """
            A preset: NAME=key:value,... such as thumb=w:300,h:300,fit:cover,q:75; a request applies it with p=thumb \
            and overrides it with its own parameters; one named default applies to every request. Repeatable.
            """)
    var presetSpecifications: [String] = []

    @Flag(help: "Take presets only: refuse every parameter but url, p, exp and sig.")
    var presetsOnly = false

    @Option(
        name: .customLong("allow-host"),
        help: "A source host allowed: example.com, or *.example.com for its subdomains. Repeatable; default: any.")
    var allowedHosts: [String] = []

    @Flag(help: "Fetch from loopback, private, link-local and CGNAT addresses too (never cloud metadata).")
    var allowPrivateNetworks = false

    @Option(
        help: """
            Serve url=local:///path sources from this directory (never outside it, symbolic links followed). \
            Default: none, http and https sources only.
            """)
    var localRoot: String?

    @Option(help: "An image to answer with, rendered as asked, when a source cannot be had (default: the error).")
    var fallbackImage: String?

    @Option(help: "The status the fallback image is sent with (default: 200).")
    var fallbackStatus: Int?

    @Option(help: "An image wm= lays over results (a logo, a copyright mark); read once (default: none).")
    var watermark: String?

    @Option(
        name: .customLong("allow-source-address"),
        help: "An address allowed whatever its network: 10.0.0.5 or 10.0.0.5:8080 or [fd00::1]:443. Repeatable.")
    var allowedSourceAddresses: [String] = []

    @Option(
        name: .customLong("auto-format"),
        help: """
            What format=auto answers, in order of preference, among the formats the client's Accept names: \
            repeatable or comma-separated (default: jxl,avif,webp). Without a match: the source's format, or JPEG/PNG.
            """)
    var autoFormats: [String] = []

    @Option(help: "Largest source in bytes (default: 33554432).")
    var maxSourceBytes: Int?

    @Option(help: "Most pixels a source may have, read from its header (default: 50000000).")
    var maxSourcePixels: Int?

    @Option(help: "Most pixels an output may have (default: 16777216).")
    var maxOutputPixels: Int?

    @Option(help: "Most /img requests at once; more get 503 with Retry-After (default: 256).")
    var maxInFlight: Int?

    @Option(
        help: """
            Memory decoding and processing may take at once: bytes, 512M, 2G, or 60% of the process's memory \
            (default: 50%). A render that does not fit waits; one that alone needs more gets 413.
            """)
    var maxMemory: String?

    @Option(help: "Most renders waiting for memory; more get 503 with Retry-After (default: 64).")
    var maxMemoryWaiting: Int?

    @Option(help: "Cache-Control max-age of images, in seconds (default: 31536000).")
    var cacheMaxAge: Int?

    @Option(
        help: """
            A JSON file of settings, named as the flags (\"max-in-flight\": 64, \"allow-hosts\": [\"*.example.com\"]); \
            flags win over OSPREY_* variables, which win over the file (default: $OSPREY_CONFIG).
            """)
    var config: String?

    @Option(
        help: """
            Send traces over OTLP/HTTP to this OpenTelemetry collector (http://collector:4318, or its full traces URL); \
            OTEL_* variables tune the export (default: none). Needs osprey built with the OTLP trait.
            """)
    var otlpEndpoint: String?

    @Flag(help: "Print the effective configuration (secrets masked) and exit.")
    var printConfig = false

    @Flag(help: "Log at debug level (every request and transfer).")
    var verbose = false

    @Option(help: "Log level: trace, debug, info (a line per request; the default), notice, warning, error, critical.")
    var logLevel: String?

    func run() async throws {
        var environment = ProcessInfo.processInfo.environment
        if let path = config ?? environment["OSPREY_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 }) {
            environment = try await ServeConfigurationFile.settings(fromFile: path).merging(environment) { $1 }
        }
        var configuration = try serverConfiguration(environment: environment)
        let otlpEndpoint = self.otlpEndpoint ?? environment["OSPREY_OTLP_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 }
        if let otlpEndpoint { try TraceExport.validate(otlpEndpoint) }
        if printConfig {
            print(ServeConfigurationFile.describe(configuration, otlpEndpoint: otlpEndpoint))
            return
        }
        var logger = Logger(label: "osprey.serve")
        logger.logLevel = verbose ? .debug : .info
        if let logLevel {
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
                        guard let number = Int(text) else {
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
        configuration.secrets = Self.secrets(flags: secrets, environment: environment)
        configuration.allowsUnsigned = flag(allowUnsigned, "OSPREY_ALLOW_UNSIGNED")
        if configuration.secrets.isEmpty, !configuration.allowsUnsigned {
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
        if !autoFormatNames.isEmpty {
            configuration.autoFormats = try autoFormatNames.map { name in
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
        if let value = try number(maxInFlight, "OSPREY_MAX_IN_FLIGHT", minimum: 1) {
            configuration.maxInFlight = value
        }
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
