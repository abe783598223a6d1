import NIOSSL

/// A self-signed certificate for `localhost` and `127.0.0.1` (P-256, valid until 2126), for the origin server's
/// `https` mode: no client trusts it unless told to (`--ca-file`), which is the point of the tests that use it. Made
/// once with
///
///     openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 -subj "/CN=localhost" \
///         -addext "subjectAltName=DNS:localhost,IP:127.0.0.1"
public enum TestCertificate {
    /// The certificate, PEM-encoded: also its own certificate authority (`CA:TRUE`), for a client's `--ca-file`.
    public static let certificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIIBmzCCAUGgAwIBAgIUI3b0SzMNrfCbFRq98TmSXUZxBPAwCgYIKoZIzj0EAwIw
        FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMTE5NTAwMloYDzIxMjYxMDI4
        MTk1MDAyWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
        PQMBBwNCAATScNQKuKrFDlk1HUQei/KDmefxj5EGIuoyR0REPmhaCfTmmHlZ93we
        PgJq7GwzREU1CtoaotSGLkX1b1cLIWmLo28wbTAdBgNVHQ4EFgQU4iZi3ipuxCf/
        hZ5PO6HOUSYSqC0wHwYDVR0jBBgwFoAU4iZi3ipuxCf/hZ5PO6HOUSYSqC0wDwYD
        VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
        zj0EAwIDSAAwRQIgKMoMpBB9W/R27w45zcdIS5lK6UzUeKt8YfoD9H4r7NkCIQCP
        6baLZrgbx1ZxDc3wRiMDJ/d+9jId6X9TtACMMraY2g==
        -----END CERTIFICATE-----
        """

    static let privateKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgs8uQy8Ae048jO1z9
        2XiGBN1XwYf8LiCLo9SWC9El/CahRANCAATScNQKuKrFDlk1HUQei/KDmefxj5EG
        IuoyR0REPmhaCfTmmHlZ93wePgJq7GwzREU1CtoaotSGLkX1b1cLIWmL
        -----END PRIVATE KEY-----
        """

    /// A TLS server configuration presenting the certificate, offering HTTP/2 by ALPN when `http2`, and then HTTP/1.1
    /// when `http1`.
    static func serverConfiguration(http2: Bool, http1: Bool = true) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)))
        if http2 { configuration.applicationProtocols = http1 ? ["h2", "http/1.1"] : ["h2"] }
        return configuration
    }
}
