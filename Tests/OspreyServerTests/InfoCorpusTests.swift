import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `/info` on every file of both corpus manifests, served as local sources: a file that must decode is described at
/// the manifest's size (upright) and frame count; a hostile one is a 4xx JSON error, never a 5xx.
@Suite(.requiresTestData, .timeLimit(.minutes(10)))
struct InfoCorpusTests {
    @Test(arguments: ["MANIFEST.tsv", "MANIFEST-modern.tsv"])
    func everyFile(manifestName: String) async throws {
        let manifest = manifestName == "MANIFEST.tsv" ? try TestData.manifest() : try TestData.modernManifest()
        let root = manifest.imagesDirectory
        let entries = manifest.entries
        try await withProxy({ $0.localRoot = root }) { client in
            var described = 0
            var refused = 0
            for entry in entries {
                // The path percent-encoded, as a URL must carry it (`issue#403.png`).
                let path = entry.path.split(separator: "/").map {
                    $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["#", "?"]))!
                }.joined(separator: "/")
                let uri = "/info?" + imageURI([("url", "local:///" + path)]).dropFirst("/img?".count)
                let response = try await client.execute(uri: uri, method: .get)
                let json = try response.json()
                #expect(response.status.code < 500, "\(entry.path): \(response.status) \(json)")
                switch entry.expected {
                case .decodeOK:
                    guard response.status == .ok else {
                        Issue.record("\(entry.path): \(response.status) \(json)")
                        continue
                    }
                    described += 1
                    if let size = Self.displayedSize(of: entry) {
                        #expect(
                            json["width"] as? Int == size.width && json["height"] as? Int == size.height,
                            "\(entry.path): \(json["width"] ?? "-")x\(json["height"] ?? "-"), manifest \(size)")
                    }
                    #expect(json["frames"] as? Int == max(entry.frames, 1), "\(entry.path): \(json["frames"] ?? "-")")
                    let format = ImageFormat(
                        sniffing: try manifest.bytes(of: entry).prefix(ImageFormat.signatureLength))
                    #expect(json["format"] as? String == format.name, "\(entry.path)")
                    if let depth = entry.details["depth"].flatMap(Int.init) {
                        #expect(json["bitDepth"] as? Int == depth, "\(entry.path): \(json["bitDepth"] ?? "-") bits")
                    }
                    #expect((json["blurHash"] as? String)?.isEmpty == false, "\(entry.path)")
                case .mustError:
                    #expect((400..<500).contains(response.status.code), "\(entry.path): \(response.status)")
                    #expect(json["error"] is String && json["status"] as? Int == Int(response.status.code))
                    refused += 1
                case .noCrash:
                    break
                }
            }
            print("/info on \(manifestName): \(entries.count) files, \(described) described, \(refused) refused")
        }
    }

    /// The size a decode-ok file shows: the manifest's stored size, exchanged for an EXIF orientation of 5 to 8 (or a
    /// JPEG XL's) or an `irot` of a quarter turn; `nil` where a `clap` crops it, which the manifest does not measure.
    static func displayedSize(of entry: Manifest.Entry) -> ImageSize? {
        let transforms = entry.details["transforms"] ?? ""
        if transforms.contains("clap") { return nil }
        let stored = ImageSize(width: entry.width, height: entry.height)
        let orientation = ImageOrientation(
            exifValue: Int(entry.details["exif_orientation"] ?? entry.details["orientation"] ?? "1") ?? 1)
        let quarter = transforms.contains("irot=90") || transforms.contains("irot=270")
        return orientation.swapsDimensions != quarter ? stored.transposed : stored
    }
}
