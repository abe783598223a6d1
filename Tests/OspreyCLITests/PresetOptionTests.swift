import ArgumentParser
import Foundation
import Osprey
import OspreyCommandLine
import OspreyServer
import Testing

@testable import OspreyProxyCLI

/// `--preset` and `OSPREY_PRESETS` for `osprey serve` and `osprey sign`.
@Suite struct PresetOptionTests {
    @Test("serve takes presets from its flags, else from OSPREY_PRESETS; presets only needs some")
    func servePresets() throws {
        let flagged = try ServeOptions.parse([
            "--allow-unsigned", "--preset", "thumb=w:300,h:300,fit:cover", "--preset", "hero=w:1600,q:70",
        ])
        let configuration = try flagged.serverConfiguration(environment: ["OSPREY_PRESETS": "ignored=w:1"])
        #expect(configuration.presets.map(\.name) == ["thumb", "hero"])
        #expect(!configuration.presetsOnly)

        let environment = ["OSPREY_PRESETS": "thumb=w:300; hero=w:1600", "OSPREY_PRESETS_ONLY": "1"]
        let fromEnvironment = try ServeOptions.parse(["--allow-unsigned"]).serverConfiguration(environment: environment)
        #expect(fromEnvironment.presets.map(\.name) == ["thumb", "hero"])
        #expect(fromEnvironment.presetsOnly)

        #expect(throws: ValidationError.self) {
            try ServeOptions.parse(["--allow-unsigned", "--presets-only"]).serverConfiguration(environment: [:])
        }
        #expect(throws: ValidationError.self) {
            try ServeOptions.parse(["--allow-unsigned", "--preset", "thumb=w:0"]).serverConfiguration(environment: [:])
        }
        #expect(throws: ValidationError.self) {
            try ServeOptions.parse(["--allow-unsigned", "--preset", "a=w:1", "--preset", "a=w:2"])
                .serverConfiguration(environment: [:])
        }
    }

    @Test("a fallback status without a fallback image is refused, not ignored")
    func fallbackStatusNeedsAnImage() throws {
        #expect(throws: ValidationError.self) {
            try ServeOptions.parse(["--allow-unsigned", "--fallback-status", "404"]).serverConfiguration(
                environment: [:])
        }
        #expect(throws: ValidationError.self) {
            try ServeOptions.parse(["--allow-unsigned"]).serverConfiguration(environment: [
                "OSPREY_FALLBACK_STATUS": "404"
            ])
        }
    }

    @Test("sign checks p= against the presets it is given")
    func signChecksPresets() throws {
        let environment = ["OSPREY_SECRET": "s", "OSPREY_PRESETS": "thumb=w:300"]
        let known = try SignOptions.parse(["https://example.com/a.jpg", "p=thumb"])
        #expect(try known.signed(environment: environment, now: .now).contains("p=thumb&sig="))
        let unknown = try SignOptions.parse(["https://example.com/a.jpg", "p=hero"])
        #expect(throws: ValidationError.self) { try unknown.signed(environment: environment, now: .now) }
    }
}
