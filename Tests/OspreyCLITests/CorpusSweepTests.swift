import Dispatch
import Foundation
import OspreyTesting
import Testing

/// `osprey info` and `osprey convert` as processes over every file of the corpus — valid, broken and hostile, in
/// both manifests: none may die by a signal or run past 20 seconds.
@Suite(.requiresTestData, .timeLimit(.minutes(10)))
struct CorpusSweepTests {
    /// The longest one run may take; a run still going then is killed and counted.
    static let limit: DispatchTimeInterval = .seconds(20)

    /// Every file both manifests list, relative to the `images` folder.
    static func corpusFiles() throws -> [String] {
        let directory = try #require(TestData.imagesDirectory)
        var files: [String] = []
        for manifest in ["MANIFEST.tsv", "MANIFEST-modern.tsv"] {
            let text = try String(contentsOfFile: directory + "/" + manifest, encoding: .utf8)
            files += text.split(separator: "\n").dropFirst().compactMap { line in
                line.split(separator: "\t", maxSplits: 1).first.map(String.init)
            }
        }
        return files
    }

    /// A run that went wrong: how it ended.
    struct Fault: CustomStringConvertible {
        let arguments: [String]
        let signal: Int32?
        let timedOut: Bool

        var description: String {
            "osprey \(arguments.joined(separator: " ")): "
                + (timedOut ? "over 20 s" : "killed by signal \(signal ?? 0)")
        }
    }

    /// The corpus in two halves (every other file), run at once: the sweep is the suite's longest test, and one
    /// process at a time left a core idle for its last two minutes.
    @Test("info and convert over all 1,631 corpus files: no death by signal, no run over 20 s", arguments: 0..<2)
    func noDeathsNoHangs(half: Int) async throws {
        try await onOwnThread { try Self.sweep(half: half) }
    }

    static func sweep(half: Int) throws {
        let directory = try #require(TestData.imagesDirectory)
        let files = try corpusFiles()
        #expect(files.count == 1_631)
        let binary = try OspreyBinary.path
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-sweep-\(UUID())").path
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: output) }

        let runs = files.enumerated().filter { $0.offset % 2 == half }.flatMap { index, file in
            [
                ["info", directory + "/" + file],
                // JPEG out: libjpeg-turbo encodes it in any build, so the time measured is reading and decoding.
                ["convert", directory + "/" + file, output + "/\(index).jpg"],
            ]
        }
        // One run at a time for this half, on a thread of its own.
        var found: [Fault] = []
        var statuses: [Int32: Int] = [:]
        for arguments in runs {
            let ending = run(binary, arguments)
            if ending.timedOut || ending.signal != nil {
                found.append(Fault(arguments: arguments, signal: ending.signal, timedOut: ending.timedOut))
            } else {
                statuses[ending.status, default: 0] += 1
            }
        }
        #expect(found.isEmpty, "\(found.prefix(20))")
        // Every run ended with a status of its own: 0 (done) or 1 (an error, in one line).
        #expect(Set(statuses.keys).isSubset(of: [0, 1]), "\(statuses)")
        #expect(statuses.values.reduce(0, +) + found.count == runs.count)
    }

    /// Runs `binary arguments...` with its output discarded; kills it after ``limit``.
    static func run(_ binary: String, _ arguments: [String]) -> (status: Int32, signal: Int32?, timedOut: Bool) {
        guard let outcome = try? ChildProcess.run(binary, arguments, timeout: limit) else { return (-1, nil, false) }
        return (outcome.status, outcome.signal, outcome.timedOut)
    }
}
