package import ArgumentParser

/// `osprey serve`'s flags for imgproxy's and thumbor's URLs, and the per-format qualities their users configure
/// (docs/migrating.md). Each has an `OSPREY_*` variable, read by the server's configuration.
package struct CompatibilityOptions: ParsableArguments {
    @Option(
        name: .customLong("imgproxy-path"),
        help:
            "Serve imgproxy URLs under this path ('/' for imgproxy's own layout; default: $OSPREY_IMGPROXY_PATH, else off)."
    )
    package var imgproxyPath: String?

    @Option(
        name: .customLong("imgproxy-key"),
        help: """
            An imgproxy signing key in hex, paired in order with --imgproxy-salt. Repeatable: any pair verifies \
            (default: $OSPREY_IMGPROXY_KEY, comma-separated).
            """)
    package var imgproxyKeys: [String] = []

    @Option(
        name: .customLong("imgproxy-salt"),
        help: "An imgproxy salt in hex, one per --imgproxy-key (default: $OSPREY_IMGPROXY_SALT, comma-separated).")
    package var imgproxySalts: [String] = []

    @Option(
        name: .customLong("imgproxy-signature-size"),
        help:
            "Bytes of the HMAC an imgproxy signature carries, 1-32 (default: $OSPREY_IMGPROXY_SIGNATURE_SIZE, else 32).",
        transform: DecimalArgument.integer)
    package var imgproxySignatureSize: Int?

    @Option(
        name: .customLong("imgproxy-preset"),
        help: """
            An imgproxy preset: NAME=option/option, such as sharp=sharpen:0.7/q:90; one named default applies to every \
            imgproxy URL. Repeatable (default: $OSPREY_IMGPROXY_PRESETS, comma-separated as IMGPROXY_PRESETS).
            """)
    package var imgproxyPresets: [String] = []

    @Option(
        name: .customLong("thumbor-path"),
        help:
            "Serve thumbor URLs under this path ('/' for thumbor's own layout; default: $OSPREY_THUMBOR_PATH, else off)."
    )
    package var thumborPath: String?

    @Option(
        name: .customLong("thumbor-key"),
        help: "thumbor's SECURITY_KEY. Repeatable: any one verifies (default: $OSPREY_THUMBOR_KEY).")
    package var thumborKeys: [String] = []

    @Option(
        name: .customLong("format-quality"),
        help: """
            The quality of a format when a request gives none: jpeg=80,webp=79,avif=63 (repeatable or comma-separated; \
            default: $OSPREY_FORMAT_QUALITY, else 80 for every format).
            """)
    package var formatQualities: [String] = []

    package init() {}
}
