import Foundation
import OspreyTesting
import Testing

@Suite struct InfoCommandTests {
    @Test func printsFormatAndSizePerFile() throws {
        try withTemporaryDirectory { directory in
            let png = directory + "/a.png"
            let gif = directory + "/b.gif"
            try Data(SyntheticImages.png(width: 12, height: 7)).write(to: URL(fileURLWithPath: png))
            try Data(SyntheticImages.gifHeader(width: 320, height: 200)).write(to: URL(fileURLWithPath: gif))

            let run = try OspreyBinary.run(["info", png, gif])
            #expect(run.status == 0)
            #expect(run.standardOutput == "\(png): png 12x7\n\(gif): gif 320x200\n")
        }
    }

    @Test func anUnreadableFileFailsWithStatus1AndTheOthersStillPrint() throws {
        try withTemporaryDirectory { directory in
            let png = directory + "/a.png"
            let text = directory + "/notes.png"
            try Data(SyntheticImages.png(width: 2, height: 3)).write(to: URL(fileURLWithPath: png))
            try Data("just text".utf8).write(to: URL(fileURLWithPath: text))

            let run = try OspreyBinary.run(["info", directory + "/missing.jpg", text, png])
            #expect(run.status == 1)
            #expect(
                run.standardOutput == """
                    \(directory)/missing.jpg: error: cannot read file
                    \(text): error: unsupported image format
                    \(png): png 2x3

                    """)
        }
    }

    @Test func jsonPrintsOneObjectPerLine() throws {
        try withTemporaryDirectory { directory in
            let webp = directory + "/c.webp"
            try Data(SyntheticImages.webpLosslessHeader(width: 40, height: 30)).write(to: URL(fileURLWithPath: webp))

            let run = try OspreyBinary.run(["info", "--json", webp, directory + "/missing"])
            #expect(run.status == 1)
            let objects = try run.standardOutput.split(separator: "\n").map {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
            }
            #expect(objects.count == 2)
            #expect(objects[0]["status"] as? String == "ok")
            #expect(objects[0]["format"] as? String == "webp")
            #expect(objects[0]["width"] as? Int == 40)
            #expect(objects[0]["height"] as? Int == 30)
            #expect(objects[0]["error"] == nil)
            #expect(objects[1]["status"] as? String == "error")
            #expect(objects[1]["error"] as? String == "cannot read file")
            #expect(objects[1]["format"] == nil)
        }
    }
}

func withTemporaryDirectory<Result>(_ body: (String) throws -> Result) throws -> Result {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory.path)
}
