import Foundation

/// The Python of `.build/test-venv` (made by `scripts/test-venv.sh`, which `make test` runs first), holding the
/// peers' own libraries: thumbor and its signer, the imgproxy URL builder, and the reference encoders and metrics the
/// tests compare Osprey with (BlurHash, ThumbHash, imagehash, CIEDE2000).
///
/// Tests that need it are skipped, saying so, when it is absent, unless `OSPREY_REQUIRE_PEERS=1` (as CI sets).
public enum PeerPython {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The venv's Python (or `$OSPREY_TEST_PYTHON`), when there is one.
    public static var path: String? {
        if let configured = ProcessInfo.processInfo.environment["OSPREY_TEST_PYTHON"] { return configured }
        let path = repository.appendingPathComponent(".build/test-venv/bin/python").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Whether `OSPREY_REQUIRE_PEERS=1` is set: a missing venv then fails the tests that need it.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["OSPREY_REQUIRE_PEERS"] == "1" }

    /// What a script printed, and how it ended.
    public struct Run: Sendable {
        /// The script's exit status.
        public let status: Int32
        /// What it wrote to standard output.
        public let standardOutput: String
        /// What it wrote to standard error.
        public let standardError: String

        /// The standard output's lines.
        public var lines: [String] { standardOutput.split(separator: "\n").map(String.init) }
    }

    /// The peer's Python environment is missing, saying how to make it.
    public struct Missing: Error, CustomStringConvertible {
        /// What went wrong, in a sentence for logs and error messages.
        public var description: String { "no .build/test-venv: run scripts/test-venv.sh" }
    }

    /// Runs `code` with `arguments` (`sys.argv[1...]`) to completion, on a thread of its own.
    public static func run(_ code: String, arguments: [String] = []) async throws -> Run {
        guard let path else { throw Missing() }
        return try await onOwnThread {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "osprey-py-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let (output, error) = (
                directory.appendingPathComponent("stdout"), directory.appendingPathComponent("stderr")
            )
            let outcome = try ChildProcess.run(
                path, ["-c", code] + arguments, output: .file(output.path), error: .file(error.path))
            return Run(
                status: outcome.status,
                standardOutput: String(decoding: try Data(contentsOf: output), as: UTF8.self),
                standardError: String(decoding: try Data(contentsOf: error), as: UTF8.self))
        }
    }
}
