import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OspreyCodecs
import OspreyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The command line and the proxy as an ordinary account runs them (uid and gid 65534, `nobody`, no supplementary
/// groups), against the in-process origin: downloads over http and https, the disk cache in a directory the account
/// owns and in one it cannot write. Services, containers and laptops run Osprey so; every other test runs as whoever
/// runs the suite, in CI root, which is how a socket option only root may set went unnoticed.
///
/// Run as root (CI), each command goes through `setpriv --reuid=65534 --regid=65534 --clear-groups`; run as another
/// user, the commands already run unprivileged and go as they are.
@Suite("as an unprivileged user (uid 65534)", .timeLimit(.minutes(3)))
struct UnprivilegedTests {
    static let account: UInt32 = 65534

    /// What runs a command as the account: `setpriv` when this process is root, nothing otherwise.
    static var prefix: [String] {
        geteuid() == 0 ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] : []
    }

    /// The account commands run as: 65534, or this process's own when it is not root.
    static var runningAccount: UInt32 { geteuid() == 0 ? account : geteuid() }

    /// Runs `osprey arguments...` as the account, with `home` as its home directory.
    static func run(
        _ arguments: [String], home: String, environment: [String: String] = [:], input: String? = nil
    ) async throws -> OspreyBinary.Run {
        let command = prefix + [try OspreyBinary.path] + arguments
        return try await OspreyBinary.run(
            command[0], Array(command.dropFirst()),
            environment: ["HOME": home, "XDG_CACHE_HOME": ""].merging(environment) { $1 }, input: input)
    }

    /// The test origin's certificate authority as a PEM file in `home`, for `--ca-file` or `OSPREY_CA_FILE`.
    static func originAuthority(in home: String) throws -> String {
        let path = home + "/origin-ca.pem"
        try Data(TestCertificate.certificatePEM.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A new directory the account owns (its home in these tests), removed after `body`.
    static func withAccountDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        try await withDirectory { directory in
            if geteuid() == 0 { #expect(chown(directory, account, account) == 0) }
            return try await body(directory)
        }
    }

    /// The owner of the file at `path`.
    static func owner(_ path: String) throws -> UInt32 {
        var status = stat()
        guard stat(path, &status) == 0 else { throw POSIXError(.ENOENT) }
        return status.st_uid
    }

    static let png = SyntheticImages.png(width: 48, height: 32)

    /// A source larger than the proxy writes around the page cache (256 KiB): 320×240, stored uncompressed.
    static let largePNG = SyntheticImages.png(width: 320, height: 240)

    /// The files under `directory` whose bytes are `bytes`.
    static func files(in directory: String, holding bytes: [UInt8]) -> [String] {
        let names = FileManager.default.subpaths(atPath: directory) ?? []
        return names.map { directory + "/" + $0 }.filter { FileManager.default.contents(atPath: $0) == Data(bytes) }
    }

    @Test(
        "fetch, prefetch, info URL (with --hashes), convert and cache info work as the account, the cache and files owned by it"
    )
    func commandsWithAnOwnedCache() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            for name in ["a", "b", "c"] { origin.route("/\(name).png", .ok(Self.png, contentType: "image/png")) }
            try await Self.withAccountDirectory { home in
                let cache = ["--cache-dir", home + "/cache"]

                // fetch: over http (the lean client), written and cached as the account
                let fetched = try await Self.run(
                    ["fetch", "-o", home + "/out"] + cache + [origin.url("/a.png")], home: home)
                #expect(fetched.status == 0, "\(fetched.standardOutput) \(fetched.standardError)")
                #expect(fetched.standardOutput.hasPrefix("ok "), "\(fetched.standardOutput)")
                #expect(!fetched.standardError.contains("Permission denied"), "\(fetched.standardError)")
                #expect(try Self.owner(home + "/out/a.png") == Self.runningAccount)
                #expect(try Self.owner(home + "/cache") == Self.runningAccount)

                // prefetch: a list from standard input
                let list = origin.url("/b.png") + "\n" + origin.url("/c.png") + "\n"
                let prefetched = try await Self.run(["prefetch"] + cache, home: home, input: list)
                #expect(prefetched.status == 0, "\(prefetched.standardError)")
                #expect(prefetched.standardOutput.hasPrefix("2 finished, 0 skipped, 0 failed, 0 not stored"))

                // cache info: what the two commands stored
                let info = try await Self.run(["cache", "info", "--json"] + cache, home: home)
                #expect(info.status == 0, "\(info.standardError)")
                #expect(info.standardOutput.contains(#""count":3,"#), "\(info.standardOutput)")

                // info URL and convert URL: from the cache the others filled (OSPREY_CACHE_DIR), no new request
                let environment = ["OSPREY_CACHE_DIR": home + "/cache"]
                let described = try await Self.run(
                    ["info", origin.url("/c.png")], home: home, environment: environment)
                #expect(described.status == 0, "\(described.standardError)")
                #expect(described.standardOutput.contains("png") && described.standardOutput.contains("48x32"))
                let hashed = try await Self.run(
                    ["info", "--json", "--hashes", origin.url("/c.png")], home: home, environment: environment)
                #expect(hashed.status == 0, "\(hashed.standardError)")
                #expect(hashed.standardOutput.contains(#""thumbHash":"#), "\(hashed.standardOutput)")
                let converted = try await Self.run(
                    ["convert", origin.url("/b.png"), home + "/out/b.webp"], home: home, environment: environment)
                #expect(converted.status == 0, "\(converted.standardError)")
                #expect(
                    try ImageDecoder.decode(Array(Data(contentsOf: URL(fileURLWithPath: home + "/out/b.webp"))))
                        .sourceFormat == .webp)
                #expect(origin.requestCount() == 3)

                // convert a file to a file (by perception, and to a palette), compare them, and fetch again: from the
                // disk cache
                let local = try await Self.run(
                    ["convert", home + "/out/a.png", home + "/out/a.jpg", "--quality", "auto"], home: home)
                #expect(local.status == 0, "\(local.standardError)")
                #expect(try Self.owner(home + "/out/a.jpg") == Self.runningAccount)
                let palette = try await Self.run(
                    ["convert", home + "/out/a.png", home + "/out/a8.png", "--quality", "60"], home: home)
                #expect(palette.status == 0, "\(palette.standardError)")
                #expect(Array(try Data(contentsOf: URL(fileURLWithPath: home + "/out/a8.png")))[25] == 3)
                let compared = try await Self.run(
                    ["compare", home + "/out/a.png", home + "/out/a.jpg"], home: home)
                #expect(compared.status == 0, "\(compared.standardError)")
                let score = Double(
                    compared.standardOutput.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines)
                        ?? "")
                #expect((score ?? 0) >= 69, "\(compared.standardOutput)")
                let again = try await Self.run(
                    ["fetch", "--force", "-o", home + "/out"] + cache + [origin.url("/a.png")], home: home)
                #expect(again.status == 0 && again.standardOutput.contains(" disk "), "\(again.standardOutput)")
                #expect(origin.requestCount() == 3)
            }
        }
    }

    @Test("a cache directory the account cannot write: one clear warning, memory only, downloads still work")
    func unwritableCache() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.png", .ok(Self.png, contentType: "image/png"))
            try await Self.withAccountDirectory { home in
                // Given a cache directory nobody but its owner (root, or nobody at all with mode 0555) may write
                let locked = home + "/locked"
                try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
                #expect(chmod(locked, 0o555) == 0)
                defer { chmod(locked, 0o755) }
                let arguments = ["fetch", "-o", home + "/out", "--cache-dir", locked, origin.url("/a.png")]

                // When the account fetches through it
                let fetched = try await Self.run(arguments, home: home)

                // Then the image is written, the line says why it is not cached, the log says once that the cache
                // is memory-only, and nothing appeared in the directory
                #expect(fetched.status == 0, "\(fetched.standardError)")
                #expect(fetched.standardOutput.contains("(not cached: "), "\(fetched.standardOutput)")
                let warnings = fetched.standardError.components(
                    separatedBy: "disk cache unavailable, caching in memory only")
                #expect(warnings.count == 2, "\(fetched.standardError)")
                // (the store that fails because of it is not a warning of its own for every image)
                #expect(!fetched.standardError.contains("cannot cache the image"), "\(fetched.standardError)")
                #expect(fetched.standardError.contains("Permission denied"))
                #expect(try Self.owner(home + "/out/a.png") == Self.runningAccount)
                #expect(try FileManager.default.contentsOfDirectory(atPath: locked).isEmpty)

                // and the default cache under a home it cannot write is the same: a warning, the image written
                let homeless = try await Self.run(
                    ["fetch", "-o", home + "/out2", origin.url("/a.png")], home: "/nonexistent")
                #expect(homeless.status == 0, "\(homeless.standardError)")
                #expect(homeless.standardError.contains("disk cache unavailable, caching in memory only"))
                #expect(FileManager.default.fileExists(atPath: home + "/out2/a.png"))
            }
        }
    }

    @Test(
        "fetch over https and http through https_proxy and http_proxy as the account; no_proxy goes direct",
        .enabled(if: ForwardProxy.executable != nil || ForwardProxy.isRequired, "tinyproxy is not installed"))
    func fetchThroughAForwardProxy() async throws {
        try await withForwardProxy { proxy in
            try await withOriginServer(testDataDirectory: nil) { plain in
                try await withOriginServer(testDataDirectory: nil, tls: true) { secure in
                    plain.route("/p.png", .ok(Self.png, contentType: "image/png"))
                    secure.route("/s.png", .ok(Self.png, contentType: "image/png"))
                    try await Self.withAccountDirectory { home in
                        let authority = try Self.originAuthority(in: home)
                        let environment = [
                            "https_proxy": proxy.url, "http_proxy": proxy.url, "OSPREY_CA_FILE": authority,
                        ]
                        let fetched = try await Self.run(
                            ["fetch", "--memory-only", "-o", home + "/out", secure.url("/s.png"), plain.url("/p.png")],
                            home: home, environment: environment)
                        #expect(fetched.status == 0, "\(fetched.standardOutput) \(fetched.standardError)")
                        #expect(
                            proxy.requestLines() == [
                                "CONNECT 127.0.0.1:\(secure.port) HTTP/1.1", "GET \(plain.url("/p.png")) HTTP/1.1",
                            ]
                                || proxy.requestLines() == [
                                    "GET \(plain.url("/p.png")) HTTP/1.1", "CONNECT 127.0.0.1:\(secure.port) HTTP/1.1",
                                ], "\(proxy.requestLines())")
                        let direct = try await Self.run(
                            ["fetch", "--memory-only", "-o", home + "/direct", secure.url("/s.png")], home: home,
                            environment: environment.merging(["no_proxy": "127.0.0.1"]) { $1 })
                        #expect(direct.status == 0, "\(direct.standardError)")
                        #expect(proxy.requestLines().count == 2)
                        #expect(secure.requestCount("/s.png") == 2 && plain.requestCount("/p.png") == 1)
                    }
                }
            }
        }
    }

    /// The https origin speaks HTTP/1.1, then offers HTTP/2 too (as CDNs do) to a server started with `--http2`: the
    /// client's two protocols.
    @Test(
        "osprey serve as the account answers /img from an http origin and, with --ca-file, /img and /info from an https one, storing a large source whole",
        arguments: [false, true])
    func serveOverHTTPAndHTTPS(http2: Bool) async throws {
        try await withOriginServer(testDataDirectory: nil) { plain in
            try await withOriginServer(testDataDirectory: nil, tls: true, http2: http2) { secure in
                plain.route("/a.png", .ok(Self.png, contentType: "image/png"))
                secure.route("/s.png", .ok(Self.png, contentType: "image/png"))
                secure.route("/large.png", .ok(Self.largePNG, contentType: "image/png"))
                try await Self.withAccountDirectory { home in
                    let authority = try Self.originAuthority(in: home)
                    let client = HTTPClient(eventLoopGroupProvider: .singleton)
                    defer { _ = client.shutdown() }
                    func get(_ port: Int, _ source: String, width: Int) async throws -> (UInt, [UInt8]) {
                        try await get(port, "/img?url=\(source)&w=\(width)")
                    }
                    func get(_ port: Int, _ path: String) async throws -> (UInt, [UInt8]) {
                        let url = "http://127.0.0.1:\(port)" + path
                        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
                        let body = try await response.body.collect(upTo: 1 << 20)
                        return (response.status.code, Array(body.readableBytesView))
                    }
                    for trusts in [true, false] {
                        let binary = try OspreyBinary.path
                        let command =
                            Self.prefix + [
                                binary, "serve", "--port", "0", "--allow-unsigned", "--allow-private-networks",
                                "--cache-dir", home + "/cache-\(trusts)",
                            ] + (trusts ? ["--ca-file", authority] : []) + (http2 ? ["--http2"] : [])
                        let server = try ServeProcess(
                            arguments: Array(command.dropFirst()), executable: command[0],
                            environment: ["HOME": home, "SSL_CERT_FILE": "", "OSPREY_CA_FILE": ""])
                        let port = try await server.port

                        let (status, body) = try await get(port, plain.url("/a.png"), width: 24)
                        #expect(status == 200)
                        #expect(try ImageDecoder.decode(body).width == 24)
                        let (secureStatus, secureBody) = try await get(port, secure.url("/s.png"), width: 12)
                        if trusts {
                            #expect(secureStatus == 200, "\(String(decoding: secureBody, as: UTF8.self))")
                            #expect(try ImageDecoder.decode(secureBody).width == 12)
                            // The choices by perception, the palette and the effort, from the https source.
                            let source = secure.url("/s.png")
                            for (query, format) in [
                                ("format=webp&q=auto", ImageFormat.webp), ("format=png&q=60", .png),
                                ("format=webp&effort=2&w=20", .webp),
                            ] {
                                let (status, body) = try await get(port, "/img?url=\(source)&" + query)
                                #expect(status == 200, "\(query): \(String(decoding: body, as: UTF8.self))")
                                #expect(try ImageDecoder.decode(body).sourceFormat == format, "\(query)")
                                if format == .png { #expect(body[25] == 3, "a palette") }
                            }
                            let (bestStatus, best) = try await get(port, "/img?url=\(source)&format=best")
                            #expect(bestStatus == 200 && (try? ImageDecoder.decode(best)) != nil)
                            // A source the proxy's cache writes around the page cache.
                            let (largeStatus, large) = try await get(port, secure.url("/large.png"), width: 32)
                            #expect(largeStatus == 200, "\(String(decoding: large, as: UTF8.self))")
                            #expect(try ImageDecoder.decode(large).width == 32)
                        } else {
                            // Without the origin's authority its certificate is refused: a bad gateway, not a 500.
                            #expect(secureStatus == 502, "\(String(decoding: secureBody, as: UTF8.self))")
                        }
                        // /info of the https source: described from the source the /img above kept, or refused alike.
                        let (infoStatus, infoBody) = try await get(port, "/info?url=" + secure.url("/s.png"))
                        let document = String(decoding: infoBody, as: UTF8.self)
                        if trusts {
                            #expect(infoStatus == 200, "\(document)")
                            #expect(
                                document.contains(#""width":48"#) && document.contains(#""blurHash":"#), "\(document)")
                        } else {
                            #expect(infoStatus == 502, "\(document)")
                        }
                        #expect(try Self.owner(home + "/cache-\(trusts)") == Self.runningAccount)
                        server.terminate()
                        #expect(await server.exitStatus == 0)
                        if trusts {
                            // The large source's write ended with the server's jobs: in its cache, whole and exactly
                            // its size (the direct write's padded last block cut off), owned by the account.
                            let stored = Self.files(in: home + "/cache-true", holding: Self.largePNG)
                            #expect(stored.count == 1, "\(stored)")
                            for path in stored { #expect(try Self.owner(path) == Self.runningAccount) }
                        }
                    }
                    #expect(plain.requestCount("/a.png") == 2)
                    #expect(secure.requestCount("/s.png") == 1)
                    #expect(secure.requestCount("/large.png") == 1)
                    #expect(secure.requests(to: "/s.png").map(\.httpVersion) == [http2 ? "HTTP/2.0" : "HTTP/1.1"])
                }
            }
        }
    }
}
