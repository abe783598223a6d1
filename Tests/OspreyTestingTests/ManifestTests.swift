import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct ManifestTests {
    @Test func parsesColumnsByName() throws {
        // Given a manifest whose columns are in another order than the corpus's
        let text = """
            format\tpath\tsource_repo\twidth\theight\tframes\texpected\treference_decoder_result\tdetails\tbytes\tsha256\tnotes\tlicense
            png\tvalid/png/a.png\tx/y\t32\t16\t1\tdecode-ok\tlibpng: ok\tbitdepth=8;colortype=6;flag\t100\tabc\tnote\tMIT
            bmp\tinvalid/unsupported-format/b.bmp\tx/y\t0\t0\t0\tmust-error\tnone\t\t7\tdef\t\tMIT

            """
        let entries = try withManifest(text) { try Manifest(contentsOf: $0).entries }
        #expect(entries.count == 2)
        #expect(entries[0].path == "valid/png/a.png")
        #expect(entries[0].imageFormat == .png)
        #expect(entries[0].width == 32 && entries[0].height == 16 && entries[0].frames == 1)
        #expect(entries[0].expected == .decodeOK)
        #expect(entries[0].details == ["bitdepth": "8", "colortype": "6", "flag": ""])
        #expect(entries[0].byteCount == 100)
        #expect(entries[1].imageFormat == .unknown)
        #expect(entries[1].expected == .mustError)
        #expect(entries[1].details.isEmpty)
    }

    @Test func refusesARowThatDoesNotMatchTheHeader() throws {
        let header =
            "path\tsource_repo\tformat\twidth\theight\tframes\texpected\treference_decoder_result\tdetails\tbytes\tsha256\tnotes"
        #expect(throws: TestDataError.self) {
            try withManifest(header + "\nonly\tthree\tfields\n") { try Manifest(contentsOf: $0) }
        }
        #expect(throws: TestDataError.self) {
            try withManifest(header.replacingOccurrences(of: "\tnotes", with: "") + "\n") {
                try Manifest(contentsOf: $0)
            }
        }
    }

    @Test("the corpus manifest lists every file with a known expectation", .requiresTestData)
    func corpusManifest() throws {
        let manifest = try TestData.manifest()
        #expect(manifest.entries.count == 1_349)
        let byExpectation = Dictionary(grouping: manifest.entries, by: \.expected).mapValues(\.count)
        #expect(byExpectation == [.decodeOK: 790, .mustError: 401, .noCrash: 158])
        for entry in manifest.entries.prefix(20) {
            #expect(FileManager.default.fileExists(atPath: manifest.imagesDirectory + "/" + entry.path))
        }
        #expect(try TestData.bytes(manifest.entries[0].path) == manifest.bytes(of: manifest.entries[0]))
    }

    private func withManifest<Result>(_ text: String, _ body: (String) throws -> Result) throws -> Result {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("manifest-\(UUID().uuidString).tsv")
            .path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path)
    }
}
