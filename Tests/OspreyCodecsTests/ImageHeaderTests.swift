import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct ImageHeaderTests {
    @Test func readsEachFormatsHeader() throws {
        #expect(
            try ImageHeader(reading: SyntheticImages.png(width: 7, height: 5))
                == ImageHeader(format: .png, width: 7, height: 5))
        #expect(
            try ImageHeader(reading: SyntheticImages.jpegHeader(width: 640, height: 480))
                == ImageHeader(format: .jpeg, width: 640, height: 480))
        #expect(
            try ImageHeader(reading: SyntheticImages.gifHeader(width: 300, height: 200))
                == ImageHeader(format: .gif, width: 300, height: 200))
        #expect(
            try ImageHeader(reading: SyntheticImages.webpLosslessHeader(width: 1000, height: 307))
                == ImageHeader(format: .webp, width: 1000, height: 307))
    }

    @Test func unknownDataIsUnsupported() {
        #expect(throws: CodecError.unsupportedFormat) { try ImageHeader(reading: Array("hello".utf8)) }
        #expect(throws: CodecError.unsupportedFormat) { try ImageHeader(reading: [UInt8]()) }
    }

    @Test(
        "a header cut short is malformed, with the library's message", arguments: [ImageFormat.png, .jpeg, .gif, .webp])
    func truncatedHeader(format: ImageFormat) throws {
        let whole: [UInt8] =
            switch format {
            case .png: SyntheticImages.png(width: 4, height: 4)
            case .jpeg: SyntheticImages.jpegHeader(width: 4, height: 4)
            case .gif: SyntheticImages.gifHeader(width: 4, height: 4)
            default: SyntheticImages.webpLosslessHeader(width: 4, height: 4)
            }
        let cut = Array(whole.prefix(12))
        #expect(ImageFormat(sniffing: cut) == format)
        let error = try #require(throws: CodecError.self) { try ImageHeader(reading: cut) }
        guard case .malformed(let reported, let reason) = error else {
            Issue.record("expected .malformed, got \(error)")
            return
        }
        #expect(reported == format)
        #expect(!reason.isEmpty)
    }

    @Test func aCorruptPNGChecksumIsMalformed() {
        var png = SyntheticImages.png(width: 2, height: 2)
        png[29] ^= 0xFF  // inside the IHDR CRC
        #expect(throws: CodecError.self) { try ImageHeader(reading: png) }
    }

    @Test func reportsAHugeDeclaredSizeWithoutAllocating() throws {
        // 16384 × 16384 declared by a few dozen bytes: the header says so, nothing is inflated.
        let header = try ImageHeader(reading: SyntheticImages.webpLosslessHeader(width: 16384, height: 16384))
        #expect(header.pixelCount == 268_435_456)
    }

    @Test("headers of valid corpus files give MANIFEST.tsv's stored size", .requiresTestData)
    func corpusSizes() throws {
        let manifest = try TestData.manifest()
        let valid = manifest.entries.filter { $0.expected == .decodeOK && $0.imageFormat != .unknown }
        #expect(valid.count > 700)
        for entry in valid {
            let header = try ImageHeader(reading: try manifest.bytes(of: entry))
            #expect(header.format == entry.imageFormat, "\(entry.path)")
            #expect(
                header.width == entry.width && header.height == entry.height,
                "\(entry.path): \(header.width)×\(header.height), manifest \(entry.width)×\(entry.height)")
        }
    }

    @Test("every corpus file's header reads or throws, never crashes", .requiresTestData)
    func corpusNeverCrashes() throws {
        let manifest = try TestData.manifest()
        var read = 0
        var refused = 0
        for entry in manifest.entries {
            do {
                _ = try ImageHeader(reading: try manifest.bytes(of: entry))
                read += 1
            } catch {
                refused += 1
            }
        }
        #expect(read + refused == manifest.entries.count)
        #expect(refused > 0)
    }
}
