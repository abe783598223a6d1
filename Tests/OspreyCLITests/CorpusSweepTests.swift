import Dispatch
import Foundation
import OspreyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `osprey info` and `osprey convert` as processes over every file of the corpus — valid, broken and hostile, in
/// both manifests: none may die by a signal or run past 20 seconds.
///
/// `make test` runs the quick sweep: `info` and `convert` to JPEG, as whoever runs the suite. `make sweep`
/// (`OSPREY_FULL_SWEEP=1`, a CI step of its own: some eight minutes of CPU) runs the paths users take: `info`,
/// `convert` to JPEG, `convert --resize 64x64` (the DCT-scaled, planned decode), `convert --format webp` and
/// `--format avif`, each as this user and, when it is root, as the unprivileged account 65534 too.
@Suite(.requiresTestData, .timeLimit(.minutes(20)))
struct CorpusSweepTests {
    /// The longest one run may take; a run still going then is killed and counted.
    static let limit: DispatchTimeInterval = .seconds(20)

    /// Whether the full matrix runs (`make sweep`).
    static let isFull = ProcessInfo.processInfo.environment["OSPREY_FULL_SWEEP"] == "1"

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
        let command: [String]
        let signal: Int32?
        let timedOut: Bool

        var description: String {
            command.joined(separator: " ") + ": " + (timedOut ? "over 20 s" : "killed by signal \(signal ?? 0)")
        }
    }

    /// The commands run on each file: `{in}` is the file, `{out}` a new output path without its extension.
    static var commands: [[String]] {
        let quick = [["info", "{in}"], ["convert", "{in}", "{out}.jpg"]]
        guard isFull else { return quick }
        return quick + [
            ["convert", "--resize", "64x64", "{in}", "{out}.jpg"],
            ["convert", "--format", "webp", "{in}", "{out}.webp"],
            ["convert", "--format", "avif", "{in}", "{out}.avif"],
        ]
    }

    /// What runs a command as each user: as it is, and through `setpriv` as 65534 when this process is root.
    static var users: [[String]] {
        guard isFull, geteuid() == 0 else { return [[]] }
        return [[], ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]]
    }

    /// The corpus in two halves (every other file), run at once: the sweep is the suite's longest test, and one
    /// process at a time left a core idle.
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
        // Writable by the unprivileged account too; each run's output is removed after it.
        chmod(output, 0o777)

        let (commands, users) = (Self.commands, Self.users)
        var runs: [[String]] = []
        for (index, file) in files.enumerated() where index % 2 == half {
            for (number, command) in commands.enumerated() {
                let arguments = command.map {
                    $0.replacingOccurrences(of: "{in}", with: directory + "/" + file)
                        .replacingOccurrences(of: "{out}", with: output + "/\(index)-\(number)")
                }
                for user in users { runs.append(user + [binary] + arguments) }
            }
        }
        // One run at a time for this half, on a thread of its own.
        var found: [Fault] = []
        var statuses: [Int32: Int] = [:]
        for command in runs {
            let ending = run(command)
            if ending.timedOut || ending.signal != nil {
                found.append(Fault(command: command, signal: ending.signal, timedOut: ending.timedOut))
            } else {
                statuses[ending.status, default: 0] += 1
            }
            if let written = command.last, written.hasPrefix(output) { unlink(written) }
        }
        #expect(found.isEmpty, "\(found.prefix(20))")
        // Every run ended with a status of its own: 0 (done) or 1 (an error, in one line).
        #expect(Set(statuses.keys).isSubset(of: [0, 1]), "\(statuses)")
        #expect(statuses.values.reduce(0, +) + found.count == runs.count)
        #expect(runs.count == (files.count + 1 - half) / 2 * commands.count * users.count)
    }

    /// Runs `command` with its output discarded; kills it after ``limit``.
    static func run(_ command: [String]) -> (status: Int32, signal: Int32?, timedOut: Bool) {
        guard let outcome = try? ChildProcess.run(command[0], Array(command.dropFirst()), timeout: limit) else {
            return (-1, nil, false)
        }
        return (outcome.status, outcome.signal, outcome.timedOut)
    }
}
