import Foundation
import OspreyTesting
import Testing

@testable import Osprey

/// Downloads through a forward proxy (Debian's tinyproxy, started per test): a `CONNECT` tunnel for `https`, requests
/// in absolute form for `http`, `no_proxy` going direct, and the address resolver still deciding every destination.
@Suite(
    "ImageDownloader: egress proxies", .timeLimit(.minutes(2)),
    .enabled(if: ForwardProxy.executable != nil || ForwardProxy.isRequired, "tinyproxy is not installed"))
struct EgressProxyTests {
    static let body = ImageDownloaderTests.body

    /// Allows 127.0.0.1 and refuses every other host, as an image proxy refuses private addresses.
    struct LoopbackOnly: AddressResolving {
        func address(forHost host: String, port: Int) async throws(DownloadError) -> String {
            guard host == "127.0.0.1" else { throw .addressRefused(host: host, reason: "not the test's origin") }
            return host
        }
    }

    static func configuration(_ proxy: ForwardProxy, noProxy: String = "") throws -> ImageDownloader.Configuration {
        var configuration = ImageDownloader.Configuration()
        configuration.proxies = try EgressProxies(environment: [
            "http_proxy": proxy.url, "HTTPS_PROXY": proxy.url, "no_proxy": noProxy,
        ])
        configuration.certificateAuthorities = try HTTPConnectionsTests.testAuthority()
        configuration.addressResolver = LoopbackOnly()
        return configuration
    }

    @Test("https goes through a CONNECT tunnel to the checked address, TLS end to end; http in absolute form")
    func throughTheProxy() async throws {
        try await withForwardProxy { proxy in
            try await withOriginServer(tls: true) { secure in
                try await withOriginServer { plain in
                    secure.route("/s.jpg", .ok(Self.body))
                    plain.route("/p.jpg", .ok(Self.body))
                    try await withImageDownloader(configuration: try Self.configuration(proxy)) { downloader in
                        let first = try await downloader.data(for: request(secure, "/s.jpg"))
                        let second = try await downloader.data(for: request(plain, "/p.jpg?a=1"))
                        #expect(first.body == Self.body && second.body == Self.body)
                        // A second https download reuses the tunnel: one CONNECT.
                        _ = try await downloader.data(for: request(secure, "/s.jpg?again"))
                    }
                    let securePort = URL(string: secure.baseURL)!.port!
                    #expect(
                        proxy.requestLines() == [
                            "CONNECT 127.0.0.1:\(securePort) HTTP/1.1", "GET \(plain.url("/p.jpg?a=1")) HTTP/1.1",
                        ])
                    #expect(secure.requestCount("/s.jpg") == 2 && plain.requestCount("/p.jpg") == 1)
                    // The origin saw the request as it is sent directly: its own host, origin-form.
                    #expect(plain.requests(to: "/p.jpg").first?.header("Host") == "127.0.0.1:\(plain.port)")
                }
            }
        }
    }

    @Test func noProxyGoesDirect() async throws {
        try await withForwardProxy { proxy in
            try await withOriginServer(tls: true) { secure in
                secure.route("/d.jpg", .ok(Self.body))
                let configuration = try Self.configuration(proxy, noProxy: "example.com, 127.0.0.0/8")
                try await withImageDownloader(configuration: configuration) { downloader in
                    let response = try await downloader.data(for: request(secure, "/d.jpg"))
                    #expect(response.body == Self.body)
                }
                #expect(proxy.requestLines().isEmpty)
                #expect(secure.requestCount("/d.jpg") == 1)
            }
        }
    }

    @Test("a redirect from an allowed https host to a refused one is refused before the proxy is asked for it")
    func aRefusedRedirectTargetIsNeverTunnelledTo() async throws {
        try await withForwardProxy { proxy in
            try await withOriginServer(tls: true) { secure in
                secure.route("/jump.jpg", .redirect(to: "https://localhost:\(secure.port)/inside.jpg"))
                secure.route("/inside.jpg", .ok(Self.body))
                try await withImageDownloader(configuration: try Self.configuration(proxy)) { downloader in
                    let outcome = await Result { () async throws(DownloadError) in
                        try await downloader.data(for: request(secure, "/jump.jpg"))
                    }
                    guard case .failure(.addressRefused(let host, _)) = outcome else {
                        Issue.record("expected the redirect refused, got \(outcome)")
                        return
                    }
                    #expect(host == "localhost")
                }
                #expect(proxy.requestLines() == ["CONNECT 127.0.0.1:\(secure.port) HTTP/1.1"])
                #expect(secure.requestCount("/inside.jpg") == 0)
            }
        }
    }

    @Test func aProxyThatCannotBeReachedIsAClearFailure() async throws {
        var configuration = ImageDownloader.Configuration()
        configuration.proxies = EgressProxies(https: EgressProxies.Proxy(host: "127.0.0.1", port: 9))
        try await withOriginServer(tls: true) { secure in
            secure.route("/x.jpg", .ok(Self.body))
            try await withImageDownloader(configuration: configuration) { downloader in
                let outcome = await Result { () async throws(DownloadError) in
                    try await downloader.data(for: request(secure, "/x.jpg"))
                }
                guard case .failure(.cannotConnect) = outcome else {
                    Issue.record("expected cannot connect, got \(outcome)")
                    return
                }
            }
            #expect(secure.requestCount("/x.jpg") == 0)
        }
    }
}

/// How the environment names proxies, as curl reads it, and which hosts `no_proxy` sends directly.
@Suite struct EgressProxiesTests {
    @Test func theEnvironmentAsCurlReadsIt() throws {
        let proxies = try EgressProxies(environment: [
            "http_proxy": "proxy.internal:3128", "HTTPS_PROXY": "http://user:p%40ss@10.0.0.1",
            "NO_PROXY": " .example.com, 192.168.0.0/16 ,::1",
        ])
        #expect(proxies.http == EgressProxies.Proxy(host: "proxy.internal", port: 3128))
        #expect(proxies.https == EgressProxies.Proxy(host: "10.0.0.1", port: 1080, user: "user", password: "p@ss"))
        #expect(proxies.https?.authorization == "Basic dXNlcjpwQHNz")
        #expect(proxies.exclusions == [".example.com", "192.168.0.0/16", "::1"])
        // The upper-case HTTP_PROXY is not read (a CGI program gets it from a request's Proxy: header).
        #expect(try EgressProxies(environment: ["HTTP_PROXY": "http://evil:1"]).isEmpty)
        // The lower-case form wins over the upper-case one.
        let both = try EgressProxies(environment: ["https_proxy": "a:1", "HTTPS_PROXY": "b:2"])
        #expect(both.https?.host == "a")
    }

    @Test(arguments: ["https://proxy:443", "socks5://proxy:1080", "http://proxy:8080/path", "http://:80", "http://p:0"])
    func unusableProxiesAreErrors(url: String) {
        #expect(throws: EgressProxies.ParseError.self) { try EgressProxies(environment: ["https_proxy": url]) }
    }

    @Test func noProxyMatchesNamesTheirSubdomainsAddressesAndNetworks() {
        let proxies = EgressProxies(
            http: EgressProxies.Proxy(host: "p"), https: EgressProxies.Proxy(host: "p"),
            exclusions: [".example.com", "internal", "10.0.0.0/8", "fd00::/8", "192.168.1.5"])
        for host in [
            "example.com", "cdn.example.com", "EXAMPLE.COM.", "internal", "a.internal", "10.2.3.4",
            "fd12::1", "[fd12::1]", "192.168.1.5",
        ] {
            #expect(proxies.proxy(scheme: "https", host: host) == nil, "\(host)")
        }
        for host in ["notexample.com", "example.org", "internal.net", "11.0.0.1", "fe80::1", "192.168.1.6"] {
            #expect(proxies.proxy(scheme: "http", host: host) != nil, "\(host)")
        }
        #expect(
            EgressProxies(http: EgressProxies.Proxy(host: "p"), exclusions: ["*"]).proxy(scheme: "http", host: "a")
                == nil)
        #expect(EgressProxies(http: EgressProxies.Proxy(host: "p")).proxy(scheme: "https", host: "a") == nil)
    }
}
