import OspreyCodecs
import Testing

@Suite struct CodecLibrariesTests {
    @Test func reportsEveryLinkedLibrary() throws {
        let libraries = CodecLibraries.all
        #expect(
            libraries.map(\.name) == ["libjpeg-turbo", "libpng", "libwebp", "giflib", "libavif", "libheif", "libjxl"])
        for library in libraries {
            let parts = library.version.split(separator: ".").compactMap { Int($0) }
            #expect(parts.count == 3, "\(library.name) \(library.version)")
        }
        // The majors Osprey is written against.
        let majors = Dictionary(uniqueKeysWithValues: libraries.map { ($0.name, $0.version.split(separator: ".")[0]) })
        #expect(["2", "3"].contains(majors["libjpeg-turbo"]))
        #expect(majors["libpng"] == "1")
        #expect(majors["libwebp"] == "1")
        #expect(majors["giflib"] == "5")
        #expect(majors["libheif"] == "1")
    }
}

@Suite struct CRC32Tests {
    @Test("libdeflate's CRC-32 and the byte-at-a-time one used without it agree, on the standard check value too")
    func bytewiseMatchesLibdeflate() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32.bytewise($0) } == 0xCBF4_3926)
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 3, 16, 255, 4096, 100_003] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(bytes.withUnsafeBytes { CRC32.bytewise($0) } == CRC32.checksum(bytes), "\(length) bytes")
        }
    }
}
