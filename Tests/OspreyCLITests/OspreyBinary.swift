import Foundation
import OspreyTesting

/// The `osprey` executable built beside the test bundle (or at `$OSPREY_BINARY`), run as a user would run it.
enum OspreyBinary {
    struct Run {
        let status: Int32
        let standardOutput: String
        let standardError: String
        /// The signal that ended the process, when one did (then `status` is its number).
        var signal: Int32? = nil
    }

    static var path: String {
        get throws {
            if let configured = ProcessInfo.processInfo.environment["OSPREY_BINARY"] { return configured }
            return try builtExecutable("osprey")
        }
    }

    /// The executable `name` of this package, built beside the test bundle.
    static func builtExecutable(_ name: String) throws -> String {
        let candidates = [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0])]
            .map { $0.deletingLastPathComponent().appendingPathComponent(name).path }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BinaryNotFound(searched: candidates)
        }
        return found
    }

    /// Runs `osprey arguments...` on a pseudo-terminal (util-linux `script`), as from an interactive shell, and
    /// returns everything the terminal received, standard output and standard error interleaved.
    static func runInTerminal(_ arguments: [String], environment: [String: String] = [:]) async throws -> Run {
        let path = try path
        return try await onOwnThread { try runInTerminal(path, arguments, environment: environment) }
    }

    private static func runInTerminal(
        _ path: String, _ arguments: [String], environment: [String: String]
    ) throws -> Run {
        func quoted(_ argument: String) -> String { "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let command = ([path] + arguments).map(quoted).joined(separator: " ")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-tty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputPath = directory.appendingPathComponent("terminal").path
        let outcome = try ChildProcess.run(
            "/usr/bin/script", ["-qec", command, "/dev/null"],
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }, output: .file(outputPath),
            error: .descriptor(1))
        return Run(
            status: outcome.status,
            standardOutput: String(decoding: try Data(contentsOf: URL(fileURLWithPath: outputPath)), as: UTF8.self),
            standardError: "", signal: outcome.signal)
    }

    struct BinaryNotFound: Error {
        let searched: [String]
    }

    /// Runs `osprey arguments...` to completion, with `input` (or the file at `inputFile`) as standard input (none by
    /// default).
    static func run(
        _ arguments: [String], environment: [String: String] = [:], input: String? = nil, inputFile: String? = nil
    ) async throws -> Run {
        try await run(path, arguments, environment: environment, input: input, inputFile: inputFile)
    }

    /// Runs the executable at `executable` with `arguments`, as ``run(_:environment:input:inputFile:)`` runs osprey,
    /// waiting on a thread of its own: a test that waited on one of the few threads every task shares would hold up
    /// every in-process server of the suite meanwhile.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil,
        inputFile: String? = nil
    ) async throws -> Run {
        try await onOwnThread {
            try runBlocking(executable, arguments, environment: environment, input: input, inputFile: inputFile)
        }
    }

    /// ``run(_:_:environment:input:inputFile:)`` on the calling thread, for what cannot wait (a suite's condition).
    static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil,
        inputFile: String? = nil
    ) throws -> Run {
        // Files rather than pipes: the child can never block on a full pipe while we wait for it.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputPath = directory.appendingPathComponent("stdout").path
        let errorPath = directory.appendingPathComponent("stderr").path
        var inputPath = inputFile
        if inputFile == nil, let input {
            inputPath = directory.appendingPathComponent("stdin").path
            try Data(input.utf8).write(to: URL(fileURLWithPath: inputPath!))
        }
        let outcome = try ChildProcess.run(
            executable, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            input: .path(inputPath), output: .file(outputPath), error: .file(errorPath))
        return Run(
            status: outcome.status,
            standardOutput: String(decoding: try Data(contentsOf: URL(fileURLWithPath: outputPath)), as: UTF8.self),
            standardError: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errorPath)), as: UTF8.self),
            signal: outcome.signal)
    }
}

/// A new temporary directory for the duration of `body`, removed afterwards.
func withDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-cli-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}
