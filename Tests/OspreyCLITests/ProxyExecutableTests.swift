import Foundation
import Testing

@testable import OspreyCLI

/// `osprey serve` and `osprey sign` run through `osprey-proxy`: `osprey` itself does not link the server, finds the
/// proxy beside it or in `../libexec/osprey/`, passes the command line on unchanged, and says where it looked when
/// the proxy is missing.
@Suite struct ProxyExecutableTests {
    @Test func ospreyDoesNotLinkTheServer() throws {
        // Hummingbird's type names are in the metadata of any executable that links it; the proxy's show the check
        // can see them.
        let marker = Data("Hummingbird".utf8)
        let proxy = try Data(contentsOf: URL(fileURLWithPath: try proxyPath()), options: .alwaysMapped)
        #expect(proxy.range(of: marker) != nil)
        let osprey = try Data(contentsOf: URL(fileURLWithPath: try OspreyBinary.path), options: .alwaysMapped)
        #expect(osprey.range(of: marker) == nil)
    }

    @Test func theProxyIsLookedForBesideOspreyThenInLibexec() {
        #expect(
            ProxyExecutable.candidates(besides: "/usr/bin/osprey") == [
                "/usr/bin/osprey-proxy", "/usr/bin/../libexec/osprey/osprey-proxy",
            ])
        #expect(
            ProxyExecutable.candidates(besides: "osprey") == ["./osprey-proxy", "./../libexec/osprey/osprey-proxy"])
    }

    @Test func theArgumentsReachTheProxyUnchanged() async throws {
        // "sign" again among the arguments, a space and a quote in one: what osprey-proxy prints when run directly.
        let arguments = ["sign", "https://example.com/sign it's.jpg", "w=300", "--base", "sign", "--secret", "s3cret"]
        let viaOsprey = try await OspreyBinary.run(arguments)
        let direct = try await OspreyBinary.run(try proxyPath(), arguments)
        #expect(viaOsprey.status == 0)
        #expect(viaOsprey.standardOutput.hasPrefix("sign/img?url=https%3A%2F%2Fexample.com%2Fsign%20it%27s.jpg&w=300"))
        #expect(viaOsprey.standardOutput == direct.standardOutput)
    }

    @Test func anInstalledOspreyFindsTheProxyInLibexec() async throws {
        try await withDirectory { root in
            // A copy, not a link: the running executable's path is the file's own.
            try FileManager.default.createDirectory(atPath: root + "/bin", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/libexec/osprey", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: try OspreyBinary.path, toPath: root + "/bin/osprey")
            try FileManager.default.createSymbolicLink(
                atPath: root + "/libexec/osprey/osprey-proxy", withDestinationPath: try proxyPath())
            let run = try await OspreyBinary.run(
                root + "/bin/osprey", ["sign", "https://example.com/a.jpg", "--secret", "s"])
            #expect(run.status == 0)
            #expect(run.standardOutput.hasPrefix("/img?url="))
        }
    }

    @Test func withoutTheProxyServeAndSignFailSayingWhereTheyLooked() async throws {
        try await withDirectory { directory in
            try FileManager.default.copyItem(atPath: try OspreyBinary.path, toPath: directory + "/osprey")
            for arguments in [["serve", "--allow-unsigned", "--port", "0"], ["sign", "https://example.com/a.jpg"]] {
                let run = try await OspreyBinary.run(directory + "/osprey", arguments)
                #expect(run.status == 1)
                #expect(
                    run.standardError.contains("osprey: \(arguments[0]) is run by osprey-proxy, which is not installed")
                )
                #expect(run.standardError.contains(directory + "/osprey-proxy"))
                #expect(run.standardError.contains(directory + "/../libexec/osprey/osprey-proxy"))
            }
            // The other commands do not need it.
            #expect(try await OspreyBinary.run(directory + "/osprey", ["--version"]).status == 0)
        }
    }

    /// The `osprey-proxy` beside the `osprey` under test.
    private func proxyPath() throws -> String {
        let osprey = try OspreyBinary.path
        return String(osprey.dropLast("osprey".count)) + "osprey-proxy"
    }
}
