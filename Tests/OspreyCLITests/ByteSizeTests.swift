import ArgumentParser
import OspreyCommandLine
import OspreyServer
import Testing

@testable import OspreyProxyCLI

/// `--max-memory`'s sizes, and how `osprey serve` reads them from its flag and the environment.
@Suite struct ByteSizeTests {
    @Test(
        arguments: [
            ("1073741824", 1 << 30), ("512M", 512 << 20), ("512MiB", 512 << 20), ("2G", 2 << 30), ("2gb", 2 << 30),
            ("1.5GiB", 3 << 29), ("64k", 64 << 10), ("1T", 1 << 40), (" 10 ", 10), ("50%", 500), ("100%", 1_000),
        ])
    func parses(text: String, bytes: Int) {
        #expect(ByteSize.parse(text, available: { 1_000 }) == bytes)
    }

    @Test(arguments: ["", "lots", "0", "0.1", "-5M", "12Q", "101%", "0%", "%", "1e30G"])
    func refuses(text: String) {
        #expect(ByteSize.parse(text, available: { 1_000 }) == nil)
    }

    @Test func serveReadsTheFlagThenTheEnvironment() throws {
        let fromEnvironment = try ServeOptions.parse(["--allow-unsigned"])
            .serverConfiguration(environment: ["OSPREY_MAX_MEMORY": "1G", "OSPREY_MAX_MEMORY_WAITING": "3"])
        #expect(fromEnvironment.maxMemory == 1 << 30 && fromEnvironment.maxMemoryWaiting == 3)
        let fromFlag = try ServeOptions.parse(["--allow-unsigned", "--max-memory", "256M"])
            .serverConfiguration(environment: ["OSPREY_MAX_MEMORY": "1G"])
        #expect(fromFlag.maxMemory == 256 << 20)
        let byDefault = try ServeOptions.parse(["--allow-unsigned"]).serverConfiguration(environment: [:])
        #expect(byDefault.maxMemory == nil && byDefault.maxMemoryWaiting == 64)
        #expect(throws: ValidationError.self) {
            try ServeOptions.parse(["--allow-unsigned", "--max-memory", "lots"]).serverConfiguration(environment: [:])
        }
    }
}
