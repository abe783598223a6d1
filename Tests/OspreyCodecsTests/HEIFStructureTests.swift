import OspreyTesting
import Testing

@testable import OspreyCodecs

/// Osprey's own reading of HEIF item structure (the checks made before libheif sees a file), over the corpus's
/// AVIF and HEIC files, which share it.
@Suite(.requiresTestData) struct HEIFStructureTests {
    static func read(_ bytes: [UInt8]) throws -> HEIFStructure {
        try bytes.withUnsafeBytes { raw in try HEIFStructure(raw, format: .avif) }
    }

    static func isobmffEntries() throws -> (Manifest, [Manifest.Entry]) {
        let manifest = try TestData.modernManifest()
        return (manifest, manifest.entries.filter { $0.format == "isobmff" })
    }

    @Test("every decode-ok AVIF and HEIC still has a readable structure, its primary item's size the manifest's")
    func validFilesAreRead() throws {
        let (manifest, entries) = try Self.isobmffEntries()
        let valid = entries.filter { $0.expected == .decodeOK }
        #expect(valid.count > 70)
        for entry in valid {
            let bytes = try manifest.bytes(of: entry)
            do {
                let structure = try Self.read(bytes)
                // Sequences (avis) may have no ispe on a still primary; stills have the manifest's stored size.
                let size = structure.primarySize
                if size.width > 0 {
                    #expect(size.width == entry.width && size.height == entry.height, "\(entry.path)")
                }
            } catch {
                Issue.record("\(entry.path): \(error)")
            }
        }
    }

    @Test("a cycle of derived images is refused before any library reads it")
    func cyclesAreRefused() throws {
        let bytes = try TestData.bytes("invalid/avif/malformed/white_iden_cycle.avif")
        do {
            _ = try Self.read(bytes)
            Issue.record("the cycle was not found")
        } catch {
            #expect("\(error)".contains("derives from itself"), "\(error)")
        }
    }

    @Test("every other file of the corpus is read or refused, never crashes")
    func hostileFilesAreReadOrRefused() throws {
        let (manifest, entries) = try Self.isobmffEntries()
        var refused = 0
        for entry in entries where entry.expected != .decodeOK {
            let bytes = try manifest.bytes(of: entry)
            do {
                _ = try Self.read(bytes)
            } catch {
                refused += 1
            }
        }
        #expect(refused > 0)
    }
}
