import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct ImageFormatTests {
    static let signatures: [(ImageFormat, [UInt8])] = [
        (.png, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
        (.jpeg, [0xFF, 0xD8]),
        (.gif, Array("GIF87a".utf8)),
        (.gif, Array("GIF89a".utf8)),
        (.webp, Array("RIFF".utf8) + [0x24, 0x00, 0x00, 0x00] + Array("WEBP".utf8)),
    ]

    @Test("each signature is detected", arguments: signatures)
    func detectsSignature(format: ImageFormat, signature: [UInt8]) {
        // Given a signature followed by arbitrary bytes, When sniffed, Then the format is named.
        #expect(ImageFormat(sniffing: signature) == format)
        #expect(ImageFormat(sniffing: signature + [0x00, 0x42, 0xFF, 0x13]) == format)
        #expect(ImageFormat(sniffing: Data(signature)) == format)
    }

    @Test("every proper prefix of a signature is unknown", arguments: signatures)
    func prefixIsUnknown(format: ImageFormat, signature: [UInt8]) {
        for length in 0..<signature.count {
            #expect(ImageFormat(sniffing: signature.prefix(length)) == .unknown, "\(format) prefix of \(length)")
        }
    }

    @Test func emptyDataIsUnknown() {
        #expect(ImageFormat(sniffing: [UInt8]()) == .unknown)
        #expect(ImageFormat(sniffing: Data()) == .unknown)
    }

    @Test func nearMissesAreUnknown() {
        #expect(ImageFormat(sniffing: Array("GIF88a".utf8)) == .unknown)
        #expect(ImageFormat(sniffing: [0xFF, 0xD9, 0xFF, 0xE0]) == .unknown)
        #expect(ImageFormat(sniffing: [0xD8, 0xFF]) == .unknown)
        #expect(ImageFormat(sniffing: Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVE".utf8)) == .unknown)
        #expect(ImageFormat(sniffing: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x00]) == .unknown)
        #expect(ImageFormat(sniffing: Array("<html><body>not an image</body></html>".utf8)) == .unknown)
    }

    @Test func readsOnlyTheSignatureBytes() {
        // Given an endless sequence, When sniffed, Then detection stops after the signature instead of hanging.
        let endless = sequence(first: UInt8(0xFF)) { _ in 0xFF }
        #expect(ImageFormat(sniffing: endless) == .unknown)
    }

    @Test func mimeTypesAndExtensions() {
        let formats = ImageFormat.builtIn + [.unknown]
        #expect(
            formats.map(\.mimeType) == [
                "image/jpeg", "image/png", "image/gif", "image/webp", "application/octet-stream",
            ])
        #expect(formats.map(\.fileExtension) == ["jpg", "png", "gif", "webp", nil])
        #expect(formats.map(\.name) == ["jpeg", "png", "gif", "webp", "unknown"])
        // A format is its name.
        #expect(ImageFormat(name: "jpeg", mimeType: "image/pjpeg", fileExtension: "jpe") == .jpeg)
    }

    @Test("every corpus file is detected as MANIFEST.tsv's format column says", .requiresTestData)
    func corpusFormats() throws {
        let manifest = try TestData.manifest()
        #expect(manifest.entries.count > 1_000)
        var checked: [ImageFormat: Int] = [:]
        for entry in manifest.entries {
            let bytes = try manifest.bytes(of: entry)
            #expect(bytes.count == entry.byteCount, "\(entry.path): size differs from the manifest")
            #expect(ImageFormat(sniffing: bytes) == entry.imageFormat, "\(entry.path): manifest says \(entry.format)")
            checked[entry.imageFormat, default: 0] += 1
        }
        // Every format, and files of other kinds, were among those checked.
        #expect((ImageFormat.builtIn + [.unknown]).allSatisfy { (checked[$0] ?? 0) > 0 })
    }
}
