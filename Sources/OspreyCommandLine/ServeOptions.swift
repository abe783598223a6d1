package import ArgumentParser

/// `osprey serve`'s options, declared once for both executables: `osprey` parses them (so its help, manual page and
/// completions show them, and a mistake is reported before anything else starts) and hands the command line to
/// `osprey-proxy`, which parses them again and runs the server. Only `osprey-proxy` links the server (Hummingbird,
/// swift-prometheus, swift-service-lifecycle): every other command starts without loading it.
package struct ServeOptions: ParsableArguments {
    /// The command's name, abstract and help text, for both executables.
    package static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the image proxy: GET /img?url=...&w=...&h=... resized, converted, cached.",
        discussion: """
            Every flag also reads an OSPREY_* variable (the flag wins): OSPREY_HOST, OSPREY_PORT, OSPREY_CACHE_DIR, \
            OSPREY_SECRET (comma-separated for several), OSPREY_ALLOW_UNSIGNED=1, OSPREY_PRESETS (semicolon-separated), \
            OSPREY_PRESETS_ONLY=1, OSPREY_ALLOW_HOSTS (comma-separated), OSPREY_HTTP2=1, \
            OSPREY_ALLOW_PRIVATE_NETWORKS=1, OSPREY_ALLOW_SOURCE_ADDRESSES (comma-separated), OSPREY_LOCAL_ROOT, \
            OSPREY_FALLBACK_IMAGE, OSPREY_FALLBACK_STATUS, OSPREY_WATERMARK, \
            OSPREY_MAX_SOURCE_BYTES, OSPREY_MAX_SOURCE_PIXELS, OSPREY_MAX_OUTPUT_PIXELS, OSPREY_MAX_IN_FLIGHT, \
            OSPREY_MAX_CONNECTIONS_PER_ORIGIN, \
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
    package var host: String?

    @Option(help: "Port to listen on (default: 8080; 0 picks a free one).", transform: DecimalArgument.integer)
    package var port: Int?

    @OptionGroup package var cacheDirectory: CacheDirectoryOption

    @OptionGroup package var certificateAuthority: CertificateAuthorityOption

    @Flag(help: "Offer HTTP/2 to https origins (ALPN), as well as HTTP/1.1, the only one offered by default.")
    package var http2 = false

    @OptionGroup package var compatibility: CompatibilityOptions

    @Option(
        name: .customLong("secret"),
        help: """
            A signing secret (default: $OSPREY_SECRET, comma-separated). Repeatable: the first signs, every one \
            verifies, for rotating keys. Prefer the variable: flags show in ps.
            """)
    package var secrets: [String] = []

    @Flag(help: "Serve unsigned requests too (signed ones are still checked).")
    package var allowUnsigned = false

    @Option(
        name: .customLong("preset"),
        help: """
            A preset: NAME=key:value,... such as thumb=w:300,h:300,fit:cover,q:75; a request applies it with p=thumb \
            and overrides it with its own parameters; one named default applies to every request. Repeatable.
            """)
    package var presetSpecifications: [String] = []

    @Flag(help: "Take presets only: refuse every parameter but url, p, exp and sig.")
    package var presetsOnly = false

    @Option(
        name: .customLong("allow-host"),
        help: "A source host allowed: example.com, or *.example.com for its subdomains. Repeatable; default: any.")
    package var allowedHosts: [String] = []

    @Flag(help: "Fetch from loopback, private, link-local and CGNAT addresses too (never cloud metadata).")
    package var allowPrivateNetworks = false

    @Flag(
        help: """
            Size /img by the browser's client hints: Sec-CH-DPR (or DPR) multiplies w and h, Sec-CH-Width (or Width) \
            is w when the URL has none, Sec-CH-Viewport-Width bounds it, Save-Data: on lowers the quality; answers \
            Accept-CH, and Vary names the hints an answer depends on. Off by default.
            """)
    package var clientHints = false

    @Option(
        help:
            "Round a width from a client hint up to a multiple of this (default: 100): few variants, not one a pixel.",
        transform: DecimalArgument.integer)
    package var clientHintsStep: Int?

    @Option(
        help: "The quality for Save-Data: on, with --client-hints (default: 50).", transform: DecimalArgument.integer)
    package var saveDataQuality: Int?

    @Flag(
        name: .customLong("info-gps"),
        help: "Show a photo's GPS position in /info (exif.gps). Default: left out, the author's to publish.")
    package var infoGPS = false

    @Option(
        help: """
            Serve url=local:///path sources from this directory (never outside it, symbolic links followed). \
            Default: none, http and https sources only.
            """)
    package var localRoot: String?

    @Option(help: "An image to answer with, rendered as asked, when a source cannot be had (default: the error).")
    package var fallbackImage: String?

    @Option(help: "The status the fallback image is sent with (default: 200).", transform: DecimalArgument.integer)
    package var fallbackStatus: Int?

    @Option(help: "An image wm= lays over results (a logo, a copyright mark); read once (default: none).")
    package var watermark: String?

    @Option(
        name: .customLong("allow-source-address"),
        help: "An address allowed whatever its network: 10.0.0.5 or 10.0.0.5:8080 or [fd00::1]:443. Repeatable.")
    package var allowedSourceAddresses: [String] = []

    @Option(
        name: .customLong("auto-format"),
        help: """
            What format=auto answers, in order of preference, among the formats the client's Accept names: \
            repeatable or comma-separated (default: jxl,avif,webp); with best among them, the smallest of those the \
            client takes, as format=best. Without a match: the source's format, or JPEG/PNG.
            """)
    package var autoFormats: [String] = []

    @Option(help: "Largest source in bytes (default: 33554432).", transform: DecimalArgument.integer)
    package var maxSourceBytes: Int?

    @Option(
        help: "Most pixels a source may have, read from its header (default: 50000000).",
        transform: DecimalArgument.integer)
    package var maxSourcePixels: Int?

    @Option(help: "Most pixels an output may have (default: 16777216).", transform: DecimalArgument.integer)
    package var maxOutputPixels: Int?

    @Option(
        help: "Highest effort=N a request may ask for, 1-9 (default: 4); above it, 400.",
        transform: DecimalArgument.integer)
    package var maxEffort: Int?

    @Option(
        help: "Most /img requests at once; more get 503 with Retry-After (default: 256).",
        transform: DecimalArgument.integer)
    package var maxInFlight: Int?

    @Option(
        help: "Most HTTP/1.1 connections to one origin; source fetches past it wait (default: as many as fetches).",
        transform: DecimalArgument.integer)
    package var maxConnectionsPerOrigin: Int?

    @Option(
        help: """
            Memory decoding and processing may take at once: bytes, 512M, 2G, or 60% of the process's memory \
            (default: 50%). A render that does not fit waits; one that alone needs more gets 413.
            """)
    package var maxMemory: String?

    @Option(
        help: "Most renders waiting for memory; more get 503 with Retry-After (default: 64).",
        transform: DecimalArgument.integer)
    package var maxMemoryWaiting: Int?

    @Option(
        help: "Cache-Control max-age of images, in seconds (default: 31536000).", transform: DecimalArgument.integer)
    package var cacheMaxAge: Int?

    @Option(
        help: """
            A JSON file of settings, named as the flags (\"max-in-flight\": 64, \"allow-hosts\": [\"*.example.com\"]); \
            flags win over OSPREY_* variables, which win over the file (default: $OSPREY_CONFIG).
            """)
    package var config: String?

    @Option(
        help: """
            Send traces over OTLP/HTTP to this OpenTelemetry collector (http://collector:4318, or its full traces URL); \
            OTEL_* variables tune the export (default: none). Needs osprey built with the OTLP trait.
            """)
    package var otlpEndpoint: String?

    @Flag(help: "Print the effective configuration (secrets masked) and exit.")
    package var printConfig = false

    @Flag(help: "Log at debug level (every request and transfer).")
    package var verbose = false

    @Option(help: "Log level: trace, debug, info (a line per request; the default), notice, warning, error, critical.")
    package var logLevel: String?

    package init() {}
}
