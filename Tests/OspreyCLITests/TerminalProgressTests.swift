import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// Progress bars, checked on a real pseudo-terminal (util-linux `script`), and their absence elsewhere.
@Suite("progress bars", .timeLimit(.minutes(2)))
struct TerminalProgressTests {
    static let escape = "\u{1B}"

    func withSlowImage(_ body: (OriginServer, String) async throws -> Void) async throws {
        try await withOriginServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-bars-\(UUID())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // 24 KiB over ~1.2 s: several redraws. /slow.png declares its (true) length; /chunked.png does not.
            let image = SyntheticImages.png(width: 8, height: 8) + [UInt8](repeating: 7, count: 24 << 10)
            let trickle = OriginResponse.ok(image).trickled(bytes: 1 << 10, every: .milliseconds(50))
            server.route("/slow.png", trickle.lyingContentLength(image.count))
            server.route("/chunked.png", trickle)
            try await body(server, directory)
        }
    }

    @Test("on a terminal: bars with a percentage, the overall line, the result, and the cursor restored")
    func barsOnATerminal() async throws {
        try await withSlowImage { server, directory in
            let run = try await OspreyBinary.runInTerminal(
                ["fetch", "--no-cache", "-o", directory, server.url("/slow.png"), server.url("/chunked.png")],
                environment: ["NO_COLOR": ""])
            #expect(run.status == 0)
            let screen = run.standardOutput
            #expect(screen.hasPrefix(Self.escape + "[?25l"))  // cursor hidden first
            // A known length: a bar with a percentage; an unknown one: a spinner and the bytes so far.
            #expect(screen.contains("% ") && screen.contains(" KiB/24.") && screen.contains("  slow.png"))
            #expect(
                ["| ", "/ ", "- ", "\\ "].contains { screen.contains("  " + $0) } && screen.contains("  chunked.png"))
            #expect(screen.contains("fetched 0/2") && screen.contains("fetched 2/2"))
            #expect(screen.contains(Self.escape + "[1A" + Self.escape + "[2K"))  // redrawn in place
            #expect(screen.contains(Self.escape + "[32m"))  // colour, NO_COLOR being empty
            #expect(screen.contains("ok     \(server.url("/slow.png")) → "))
            #expect(screen.contains("ok     \(server.url("/chunked.png")) → "))
            #expect(screen.hasSuffix(Self.escape + "[?25h"))  // cursor shown again at the end
        }
    }

    @Test("NO_COLOR drops the colour but keeps the bars; --quiet and a pipe draw nothing")
    func noColorQuietAndPipes() async throws {
        try await withSlowImage { server, directory in
            let plain = try await OspreyBinary.runInTerminal(
                ["fetch", "--no-cache", "--force", "-o", directory, server.url("/slow.png")],
                environment: ["NO_COLOR": "1"])
            #expect(plain.status == 0 && plain.standardOutput.contains("fetched 1/1"))
            #expect(!plain.standardOutput.contains(Self.escape + "[32m"))

            let quiet = try await OspreyBinary.runInTerminal(
                ["fetch", "--quiet", "--no-cache", "--force", "-o", directory, server.url("/slow.png")])
            #expect(quiet.status == 0 && !quiet.standardOutput.contains(Self.escape))
            #expect(quiet.standardOutput.contains("ok     \(server.url("/slow.png"))"))

            let piped = try await OspreyBinary.run([
                "fetch", "--no-cache", "--force", "-o", directory, server.url("/slow.png"),
            ])
            #expect(piped.status == 0)
            #expect(!(piped.standardOutput + piped.standardError).contains(Self.escape))

            let prefetch = try await OspreyBinary.runInTerminal(
                ["prefetch", "--no-cache", "-i", try write(Array(server.url("/slow.png").utf8), to: directory + "/u")])
            #expect(prefetch.standardOutput.contains("prefetched 1/1"))
            #expect(prefetch.standardOutput.contains("1 finished, 0 skipped, 0 failed"))
        }
    }
}

extension TerminalProgressTests {
    @Test("Ctrl-C clears the bars, shows the cursor and exits with 130")
    func interrupt() async throws {
        try await withOriginServer { server in
            let gate = OriginGate()
            defer { gate.open() }
            server.route("/stuck.png", .ok(SyntheticImages.png(width: 4, height: 4)).held(by: gate))
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-int-\(UUID())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let screen = directory + "/screen"
            _ = FileManager.default.createFile(atPath: screen, contents: nil)
            // A long timeout: on a loaded machine the bars may take a while to show, and the held request must not
            // time out first (the process would be gone before its Ctrl-C).
            let command = [
                try OspreyBinary.path, "fetch", "--no-cache", "--timeout", "300", "-o", directory,
                server.url("/stuck.png"),
            ]
            .map { "'" + $0 + "'" }.joined(separator: " ")
            let keyboard = try ChildProcess.pipe()
            let process = try ChildProcess.spawn(
                "/usr/bin/script", ["-qec", command, "/dev/null"], input: .descriptor(keyboard.read),
                output: .file(screen))
            close(keyboard.read)
            defer { close(keyboard.write) }
            // The terminal shows the bars once the request is at the origin (the origin holds it).
            await server.waitForRequests(to: "/stuck.png", count: 1)
            let deadline = ContinuousClock.now + .seconds(20)
            while !(String(decoding: FileManager.default.contents(atPath: screen) ?? Data(), as: UTF8.self))
                .contains("fetched 0/1"), ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(20))  // polling another process's terminal output
            }
            // Ctrl-C, through the terminal's line discipline (an error, not a crash, if the process is gone).
            var interrupt: UInt8 = 0x03
            _ = write(keyboard.write, &interrupt, 1)
            let outcome = try await onOwnThread { ChildProcess.wait(process) }
            let output = String(decoding: FileManager.default.contents(atPath: screen) ?? Data(), as: UTF8.self)
            #expect(outcome.status == 130)
            #expect(output.contains("fetched 0/1"))
            #expect(output.hasSuffix(Self.escape + "[?25h"))
        }
    }
}
