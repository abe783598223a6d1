import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `local:///path` sources under `--local-root`, over a real socket: served from the directory, never from outside
/// it, however the path is written.
@Suite struct ProxyLocalSourceTests {
    @Test("a file under the root is served and resized; an edited file is a new source")
    func servesFilesUnderTheRoot() async throws {
        try await withTemporaryDirectory { directory in
            let root = directory + "/root"
            try FileManager.default.createDirectory(atPath: root + "/photos", withIntermediateDirectories: true)
            try Data(try Fixtures.jpeg(width: 80, height: 60)).write(to: URL(fileURLWithPath: root + "/photos/cat.jpg"))
            // A link inside the root, to a file inside it, is followed.
            try FileManager.default.createSymbolicLink(
                atPath: root + "/alias.jpg", withDestinationPath: "photos/cat.jpg")
            try await withProxy(setup: .live, { $0.localRoot = root }) { client in
                let resized = try await client.execute(
                    uri: imageURI([("url", "local:///photos/cat.jpg"), ("w", "40")]), method: .get)
                #expect(resized.status == .ok)
                #expect(try Fixtures.decode(resized.body).width == 40)
                let alias = try await client.execute(uri: imageURI([("url", "local:///alias.jpg")]), method: .get)
                #expect(try Fixtures.decode(alias.body).width == 80)

                // The file replaced by another image: the same URL renders the new one.
                try Data(try Fixtures.jpeg(width: 100, height: 50))
                    .write(to: URL(fileURLWithPath: root + "/photos/cat.jpg"))
                let edited = try await client.execute(
                    uri: imageURI([("url", "local:///photos/cat.jpg"), ("w", "40")]), method: .get)
                let image = try Fixtures.decode(edited.body)
                #expect(image.width == 40 && image.height == 20)
            }
        }
    }

    @Test(
        "nothing outside the root is served: .. in any spelling, links out, directories, missing files (all 404)",
        arguments: [
            "local:///../outside.jpg", "local:///photos/../../outside.jpg", "local:///%2e%2e/outside.jpg",
            "local:///%2E%2E%2Foutside.jpg", "local:///link-out.jpg", "local:///photos", "local:///missing.jpg",
            "local:///photos/cat.jpg%00.png", "local:////etc/passwd",
        ])
    func refusesWhatIsNotUnderTheRoot(source: String) async throws {
        try await withTemporaryDirectory { directory in
            let root = directory + "/root"
            try FileManager.default.createDirectory(atPath: root + "/photos", withIntermediateDirectories: true)
            let jpeg = Data(try Fixtures.jpeg(width: 80, height: 60))
            try jpeg.write(to: URL(fileURLWithPath: root + "/photos/cat.jpg"))
            try jpeg.write(to: URL(fileURLWithPath: directory + "/outside.jpg"))
            try FileManager.default.createSymbolicLink(
                atPath: root + "/link-out.jpg", withDestinationPath: directory + "/outside.jpg")
            try await withProxy(setup: .live, { $0.localRoot = root }) { client in
                let response = try await client.execute(uri: imageURI([("url", source)]), method: .get)
                #expect(response.status == .notFound, "\(source)")
                #expect(try response.json()["error"] as? String == "the source was not found")
            }
        }
    }

    @Test("without a local root, local: URLs are refused as any other scheme is")
    func refusedWithoutARoot() async throws {
        try await withProxy(setup: .live) { client in
            let response = try await client.execute(uri: imageURI([("url", "local:///photos/cat.jpg")]), method: .get)
            #expect(response.status == .badRequest)
        }
    }
}
