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
