import ArgumentParser
import Foundation
import Testing

@testable import OspreyProxyCLI

/// `osprey serve --otlp-endpoint`: the collector's URL, and what a build without the OTLP trait says. (The export itself
/// runs in `make test-otlp`, against a collector, with osprey built with the trait.)
@Suite struct TraceExportTests {
    @Test("a collector's base URL gets OTLP's traces path; a URL with a path is kept; anything else is refused")
    func tracesURL() throws {
        #expect(try TraceExport.tracesURL("http://collector:4318") == "http://collector:4318/v1/traces")
        #expect(try TraceExport.tracesURL("http://collector:4318/") == "http://collector:4318/v1/traces")
        #expect(
            try TraceExport.tracesURL("https://otel.example.com/otlp/v1/traces")
                == "https://otel.example.com/otlp/v1/traces")
        for bad in ["collector:4318", "ftp://collector/v1/traces", "http://", "not a url"] {
            #expect(throws: ValidationError.self, "\(bad)") { try TraceExport.tracesURL(bad) }
        }
    }

    @Test(
        "--otlp-endpoint (and the config file's otlp-endpoint) shows in --print-config; without the trait it is refused"
    )
    func serveOption() async throws {
        let run = try await OspreyBinary.run(
            ["serve", "--allow-unsigned", "--print-config"],
            environment: ["OSPREY_OTLP_ENDPOINT": "http://127.0.0.1:4318"])
        if TraceExport.isAvailable {
            #expect(run.status == 0, "\(run.standardError)")
            #expect(run.standardOutput.contains("\"otlp-endpoint\"") && run.standardOutput.contains("127.0.0.1:4318"))
        } else {
            #expect(run.status != 0)
            #expect(run.standardError.contains("built without trace export"), "\(run.standardError)")
            #expect(run.standardError.contains("OTLP trait"))
        }
        let malformed = try await OspreyBinary.run(["serve", "--allow-unsigned", "--otlp-endpoint", "collector:4318"])
        #expect(malformed.status != 0)
        #expect(malformed.standardError.contains("is not an http or https URL"), "\(malformed.standardError)")
    }
}
