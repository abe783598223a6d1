import Foundation
import OspreyCodecs
import Testing

/// Inputs `make fuzz` found (Fuzz/Regressions): each must now fail cleanly.
@Suite struct FuzzRegressionTests {
    @Test func gifFrameOutsideTheCanvasDisposedToBackground() throws {
        // A 1×1 canvas, a frame at x = 320 with disposal "background", then another frame.
        let bytes = try #require(
            Data(
                base64Encoded:
                    "R0lGODdhAQABAID/AAAAAAAAACH5BAgAAAAALAAAAEABAAEAAAgEAAEEBAAh+QQIAAAAACwAAAAAAQABAIH/AAAAAAAAAAAAAAAIBAABBAQAOw=="
            ))
        // Whether it decodes is secondary; it must not trap.
        if let image = try? ImageDecoder.decode(bytes) {
            #expect(image.width == 1 && image.height == 1)
        }
    }

    @Test func pngTextChunkClaimingAGibibyteIsNotAllocated() throws {
        let bytes: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x03, 0x00, 0x00, 0x00, 0x25, 0xDB, 0x56,
            0xCA, 0x3F, 0xFF, 0xFF, 0xFF, 0x69, 0x54, 0x58, 0x74, 0x29, 0xD5, 0x83, 0x80, 0x00, 0x00, 0x00,
            0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
        ]
        #expect(throws: CodecError.self) { try ImageDecoder.decode(bytes) }
        #expect(throws: CodecError.self) { try ImageHeader(reading: bytes) }
        // The same with sPLT, and with an eXIf chunk (which must still be read when it fits).
        for type in ["sPLT", "eXIf"] {
            var variant = bytes
            variant.replaceSubrange(37..<41, with: Array(type.utf8))
            let error = try #require(throws: CodecError.self) { try ImageDecoder.decode(variant) }
            #expect(
                error
                    == .malformed(
                        format: .png, reason: "\(type) chunk declares 1073741823 bytes, beyond the end of the data"))
        }
    }

    /// An `nclx` box with code points libheif does not know: libheif returned the profile with its error, and the
    /// decoder leaked it (LeakSanitizer, under `make test-asan`, holds the test to that).
    @Test func heicColourCodePointsLibheifRefuses() throws {
        let encoded: String =
            "AAAAHGZ0eXBoZWl4AAAAAG1pZjFoZWl4bWlhZgAAAVRtZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0AAAAAAAAAAAAAAAAAAAA"
            + "AA5waXRtAAAAAAABAAAAImlsb2MAAAAAREAAAQABAAAAAAF4AAEAAAAAAAAAZgAAACNpaW5mAAAAAAABAAAAFWluZmUCAAAAAAEA"
            + "AGh2YzEAAAAA1GlwcnAAAAC1aXBjbwAAAHZodmNDAQQIAAAAAAAAAAAAPPAA/P74+AAADwNgAAEAF0ABDAH//wQIAAADAJ04AAAD"
            + "AAA8ugJAYQABACpCAQEECAAAAwCdOAAAAwAAPLAKCA8WW6kkprm4CGgwIAAAAwAgAAADACFiAAEAB0QBwXKwYkAAAAATY29scm5j"
            + "bHgAAQANAD2AAAAAFGlzcGUAAAAAAAABQAAAAPAAAAAQcGl4aQAAAAADCAgIAAAAF2lwbWEAAAAAAAAAAQABBIECAwQAAABubWRh"
            + "dAAAAGIoAa8TIaE8+OWp9HP//bdRX/qD54fd2DYpLJGb2nxE6lKiyCIAAHUAAcGrKVFkEQAASIAAnQAFMAElkwAA5wAL0AAAAwAA"
            + "AwApoIcAAAMAAAMAAAMAAAMAAAMAAAMAAAMB2Q=="
        let bytes = try #require(Data(base64Encoded: encoded))
        _ = try? ImageDecoder.decode(bytes)
        _ = try? ImageHeader(reading: bytes)
        _ = ColorProfile(embeddedIn: bytes)
    }
}
