import Foundation
import Testing

@testable import OspreyCLI

/// The command-line tool's own text handling (written without the Objective-C-shaped part of Foundation), checked
/// against what Foundation's versions answered.
struct CommandTextTests {
    @Test("an output's directory is what precedes its last slash, '.' without one, '/' at the root")
    func directories() {
        for (path, directory) in [
            ("out.jpg", "."), ("a/out.jpg", "a"), ("/tmp/a/out.jpg", "/tmp/a"), ("/out.jpg", "/"),
            ("a//out.jpg", "a"), ("a/b/", "a"), ("./x.png", "."), ("../x.png", ".."),
        ] {
            #expect(OutputFile.directory(of: path) == directory, "\(path)")
            let foundation = (path as NSString).deletingLastPathComponent
            #expect((foundation.isEmpty ? "." : foundation) == directory, "\(path)")
        }
    }

    @Test("sizes are written with one decimal, as %.1f rounds them")
    func sizes() {
        for bytes in [0, 1023, 1024, 1280, 1331, 1535, 1536, 10_189, 1 << 20, 5_347_737, 999_999_999] {
            let expected =
                bytes < 1024
                ? "\(bytes) B"
                : bytes < 1 << 20
                    ? String(format: "%.1f KiB", Double(bytes) / 1024)
                    : String(format: "%.1f MiB", Double(bytes) / Double(1 << 20))
            #expect(TerminalProgress.size(bytes) == expected, "\(bytes)")
        }
    }

    @Test("JSON strings escape quotes, backslashes and control characters")
    func jsonStrings() throws {
        let text = "a\"b\\c\n\u{1}\u{1F}é"
        #expect(JSONLine.quoted(text) == #""a\"b\\c\n\u0001\u001fé""#)
        let decoded = try JSONDecoder().decode(String.self, from: Data(JSONLine.quoted(text).utf8))
        #expect(decoded == text)
    }

    @Test("a directory is created with its parents; a file in the way is refused")
    func createDirectory() throws {
        let root = NSTemporaryDirectory() + "osprey-mkdir-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: root) }
        try OutputFile.createDirectory(root + "/a/b/c")
        try OutputFile.createDirectory(root + "/a/b/c")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: root + "/a/b/c", isDirectory: &isDirectory))
        #expect(isDirectory.boolValue)
        #expect(FileManager.default.createFile(atPath: root + "/file", contents: Data([1])))
        #expect(throws: CommandError.self) { try OutputFile.createDirectory(root + "/file/sub") }
        #expect(throws: CommandError.self) { try OutputFile.createDirectory(root + "/file") }
    }
}
