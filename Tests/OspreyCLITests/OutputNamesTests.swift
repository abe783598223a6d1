import Foundation
import OspreyCodecs
import Testing

@testable import OspreyCLI

/// The files `fetch` writes, named as loads end, from any task.
struct OutputNamesTests {
    func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    @Test("many loads of one name, from many tasks at once, get distinct names that skip the files already there")
    func distinctNamesAcrossTasks() async throws {
        try await withDirectory { directory in
            // Given pic-2.png and pic-5.png already in the directory, and a name another URL stem produces
            for name in ["pic-2.png", "pic-5.png"] {
                #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data("mine".utf8)))
            }
            let names = OutputNames(directory: directory, overwrites: false)
            let other = try names.write([9], for: URL(string: "https://example.com/pic-3.png")!, format: .png)
            #expect(other == directory + "/pic-3.png")

            // When 50 loads of .../pic.png write their files at once, each its own bytes
            let paths = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let url = URL(string: "https://example.com/\(index)/pic.png")!
                        return (index, try names.write([UInt8(index)], for: url, format: .png))
                    }
                }
                return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }

            // Then every one is distinct, none is a file that was there or the other stem's, they are the 50 lowest
            // free numbers, each holds its own bytes, the files that were there are untouched, and nothing else is
            // left in the directory
            let expected = ["pic.png"] + (1...52).filter { ![2, 3, 5].contains($0) }.map { "pic-\($0).png" }
            #expect(Set(paths.values) == Set(expected.map { directory + "/" + $0 }))
            #expect(paths.count == 50)
            for (index, path) in paths { #expect(contents(path) == [UInt8(index)], "\(path)") }
            for name in ["pic-2.png", "pic-5.png"] { #expect(contents(directory + "/" + name) == Array("mine".utf8)) }
            let listed = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(Set(listed) == Set(expected + ["pic-2.png", "pic-3.png", "pic-5.png"]))
        }
    }

    @Test("with --force, a file already there is replaced, but no name is written twice in one run")
    func overwritingStillUniqueWithinARun() async throws {
        try await withDirectory { directory in
            #expect(FileManager.default.createFile(atPath: directory + "/cat.jpg", contents: Data("mine".utf8)))
            let names = OutputNames(directory: directory, overwrites: true)
            let url = URL(string: "https://example.com/cat.jpg")!
            #expect(try names.write([1], for: url, format: .jpeg) == directory + "/cat.jpg")
            #expect(try names.write([2], for: url, format: .jpeg) == directory + "/cat-1.jpg")
            #expect(try names.write([3], for: url, format: .webp) == directory + "/cat.webp")
            #expect(contents(directory + "/cat.jpg") == [1])
            #expect(contents(directory + "/cat-1.jpg") == [2])
            let listed = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(Set(listed) == ["cat.jpg", "cat-1.jpg", "cat.webp"])
        }
    }

    @Test("a directory that cannot be written says so, naming the file, and leaves nothing")
    func unwritableDirectory() async throws {
        try await withDirectory { directory in
            let names = OutputNames(directory: directory + "/missing", overwrites: false)
            let error = #expect(throws: CommandError.self) {
                try names.write([1], for: URL(string: "https://example.com/cat.jpg")!, format: .jpeg)
            }
            #expect(error?.message.hasPrefix("cannot write \(directory)/missing/cat.jpg: ") == true)
            let listed = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(listed.isEmpty)
        }
    }
}
