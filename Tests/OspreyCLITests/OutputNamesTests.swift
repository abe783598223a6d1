import Foundation
import OspreyCodecs
import Testing

@testable import OspreyCLI

/// The names `fetch` writes under, reserved as loads end, from any task.
struct OutputNamesTests {
    @Test("many loads of one name, from many tasks at once, get distinct names that skip the files already there")
    func distinctNamesAcrossTasks() async throws {
        try await withDirectory { directory in
            // Given pic-2.png and pic-5.png already in the directory, and a name another URL stem produces
            for name in ["pic-2.png", "pic-5.png"] {
                #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data("mine".utf8)))
            }
            let names = OutputNames(directory: directory, overwrites: false)
            let other = names.reserve(for: URL(string: "https://example.com/pic-3.png")!, format: .png)
            #expect(other == directory + "/pic-3.png")

            // When 50 loads of .../pic.png reserve their names at once
            let paths = await withTaskGroup(of: String.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        names.reserve(for: URL(string: "https://example.com/\(index)/pic.png")!, format: .png)
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }

            // Then every one is distinct, none is a file that was there or the other stem's, and they are the 50
            // lowest free numbers
            let expected = ["pic.png"] + (1...52).filter { ![2, 3, 5].contains($0) }.map { "pic-\($0).png" }
            #expect(Set(paths) == Set(expected.map { directory + "/" + $0 }))
            #expect(paths.count == 50)
        }
    }

    @Test("with --force, names already in the directory are taken again, but never twice in one run")
    func overwritingStillUniqueWithinARun() {
        let names = OutputNames(directory: "/nonexistent", overwrites: true)
        let url = URL(string: "https://example.com/cat.jpg")!
        #expect(names.reserve(for: url, format: .jpeg) == "/nonexistent/cat.jpg")
        #expect(names.reserve(for: url, format: .jpeg) == "/nonexistent/cat-1.jpg")
        #expect(names.reserve(for: url, format: .webp) == "/nonexistent/cat.webp")
    }
}
