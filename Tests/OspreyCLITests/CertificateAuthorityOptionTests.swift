import ArgumentParser
import Foundation
import Osprey
import OspreyCommandLine
import OspreyTesting
import Testing

/// `--ca-file` and the variables behind it: the file is read once for the two resolutions of a run, and again when it
/// changed between them.
@Suite struct CertificateAuthorityOptionTests {
    @Test func aFileIsReadAgainOnceItChanged() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-ca-\(UUID()).pem").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(TestCertificate.certificatePEM.utf8).write(to: URL(filePath: path))
        let option = try CertificateAuthorityOption.parse(["--ca-file", path])
        #expect(try option.resolved(environment: [:]).path == path)
        #expect(try option.resolved(environment: [:]).path == path)
        // The same path, now no PEM file: a resolution kept from before would still answer with the certificate.
        try Data("not a certificate\n".utf8).write(to: URL(filePath: path))
        #expect(throws: ValidationError.self) { try option.resolved(environment: [:]) }
        try Data(TestCertificate.certificatePEM.utf8).write(to: URL(filePath: path))
        #expect(try option.resolved(environment: [:]).path == path)
    }

    @Test func theFlagThenOspreyThenSSLCertFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-ca-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (flag, osprey, ssl) = (directory + "/flag.pem", directory + "/osprey.pem", directory + "/ssl.pem")
        for path in [flag, osprey, ssl] { try Data(TestCertificate.certificatePEM.utf8).write(to: URL(filePath: path)) }
        let environment = ["OSPREY_CA_FILE": osprey, "SSL_CERT_FILE": ssl]
        #expect(
            try CertificateAuthorityOption.parse(["--ca-file", flag]).resolved(environment: environment).path == flag)
        #expect(try CertificateAuthorityOption.parse([]).resolved(environment: environment).path == osprey)
        #expect(try CertificateAuthorityOption.parse([]).resolved(environment: ["SSL_CERT_FILE": ssl]).path == ssl)
        #expect(try CertificateAuthorityOption.parse([]).resolved(environment: [:]).path == nil)
    }
}
