import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

/// `osprey serve` as a process: flags, refusal to start open by mistake, and graceful shutdown on SIGTERM.
@Suite struct ServeCommandTests {
    @Test func refusesToStartWithoutASecretOrAllowUnsigned() async throws {
        let run = try await OspreyBinary.run(["serve", "--port", "0"], environment: ["OSPREY_SECRET": ""])
        #expect(run.status == 2)
        #expect(run.standardError.contains("--allow-unsigned"))
        let badHost = try await OspreyBinary.run(["serve", "--allow-unsigned", "--allow-host", "*."])
        #expect(badHost.status == 2)
        #expect(badHost.standardError.contains("not a host pattern"))
    }

    @Test("bad imgproxy keys, salts, presets and prefixes, and bad format qualities stop the server at start (exit 2)")
    func badCompatibilitySettings() async throws {
        let cases: [([String], String)] = [
            (
                ["--imgproxy-path", "/", "--imgproxy-key", "zz", "--imgproxy-salt", "00"],
                "imgproxy key is not hexadecimal"
            ),
            (
                ["--imgproxy-path", "/", "--imgproxy-key", "00", "--imgproxy-salt", "abc"],
                "imgproxy salt is not hexadecimal"
            ),
            (["--imgproxy-path", "/", "--imgproxy-key", "00"], "one --imgproxy-salt for each --imgproxy-key"),
            (["--imgproxy-path", "/", "--imgproxy-preset", "nothing"], "is not NAME=option/option"),
            (["--imgproxy-path", "/", "--imgproxy-signature-size", "33"], "from 1 to 32"),
            (["--imgproxy-path", "/img"], "must be / or a path"),
            (["--imgproxy-path", "/a b"], "must be / or a path"),
            (["--imgproxy-path", "/x", "--thumbor-path", "/x/"], "must differ"),
            (["--format-quality", "webp=101"], "is not FORMAT=QUALITY"),
            (["--format-quality", "bmp=80"], "is not FORMAT=QUALITY"),
        ]
        for (arguments, message) in cases {
            let run = try await OspreyBinary.run(["serve", "--port", "0", "--allow-unsigned"] + arguments)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.standardError.contains(message), "\(arguments): \(run.standardError)")
        }
        let environment = try await OspreyBinary.run(
            ["serve", "--port", "0", "--allow-unsigned"],
            environment: ["OSPREY_IMGPROXY_PATH": "/", "OSPREY_IMGPROXY_KEY": "0g", "OSPREY_IMGPROXY_SALT": "00"])
        #expect(environment.status == 2 && environment.standardError.contains("not hexadecimal"))
    }

    @Test func sigtermLetsTheRequestInFlightFinishThenExitsZero() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let gate = OriginGate()
            let pixels = try PixelBuffer(
                width: 64, height: 48, format: .rgb8, bytes: [UInt8](repeating: 200, count: 64 * 48 * 3))
            origin.route(
                "/slow.png", OriginResponse.ok(try ImageEncoder.encode(Image(pixels: pixels), as: .png)).held(by: gate))
            let directory = NSTemporaryDirectory() + "osprey-serve-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let server = try ServeProcess(arguments: [
                "serve", "--port", "0", "--allow-unsigned", "--allow-private-networks", "--cache-dir", directory,
            ])
            let port = try await server.port
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = client.shutdown() }

            // A request the origin holds is in flight when SIGTERM arrives.
            let url = "http://127.0.0.1:\(port)/img?url=\(origin.url("/slow.png"))&w=32"
            async let response = client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
            await origin.waitForRequests(to: "/slow.png", count: 1)
            server.terminate()
            try await server.waitForLog("shutting down")
            gate.open()

            let answered = try await response
            #expect(answered.status == .ok)
            let body = try await answered.body.collect(upTo: 1 << 20)
            #expect(try ImageDecoder.decode(Array(body.readableBytesView)).width == 32)
            #expect(await server.exitStatus == 0)
        }
    }

    @Test(
        "a proxy request after `osprey fetch` of the same source in the same cache directory does not go to the origin")
    func proxyUsesWhatFetchCached() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let pixels = try PixelBuffer(
                width: 64, height: 48, format: .rgb8, bytes: [UInt8](repeating: 120, count: 64 * 48 * 3))
            let png = try ImageEncoder.encode(Image(pixels: pixels), as: .png)
            origin.route("/shared.png", .ok(png, contentType: "image/png"))
            // What only a private cache may keep: fetch keeps it, the proxy must not serve it from there.
            origin.route(
                "/private.png", .ok(png, contentType: "image/png").header("Cache-Control", "private"))
            let directory = NSTemporaryDirectory() + "osprey-serve-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let fetched = try await OspreyBinary.run(
                [
                    "fetch", "-o", directory + "/out", "--cache-dir", directory + "/cache",
                    origin.url("/shared.png"), origin.url("/private.png"),
                ])
            #expect(fetched.status == 0, "\(fetched.standardError)")
            #expect(origin.requestCount("/shared.png") == 1)

            let server = try ServeProcess(arguments: [
                "serve", "--port", "0", "--allow-unsigned", "--allow-private-networks", "--cache-dir",
                directory + "/cache",
            ])
            let port = try await server.port
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = client.shutdown() }
            for path in ["/shared.png", "/private.png"] {
                let url = "http://127.0.0.1:\(port)/img?url=\(origin.url(path))&w=32"
                let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
                #expect(response.status == .ok)
                let body = try await response.body.collect(upTo: 1 << 20)
                #expect(try ImageDecoder.decode(Array(body.readableBytesView)).width == 32)
            }
            #expect(origin.requestCount("/shared.png") == 1)
            #expect(origin.requestCount("/private.png") == 2)
            server.terminate()
            #expect(await server.exitStatus == 0)
        }
    }
}

/// `osprey serve` (or another server of this package: an example) running in a child process: its port, read from
/// the log line that announces it, and its exit.
final class ServeProcess: Sendable {
    private let pid: pid_t
    /// What the reading and waiting threads share with the test.
    private final class Shared: Sendable {
        let exit = Synchronization.Mutex<(status: Int32?, waiter: CheckedContinuation<Int32, Never>?)>((nil, nil))
        let log = Synchronization.Mutex("")
    }

    private let shared = Shared()
    private let pending: Task<Int, any Error>
    /// Everything written to standard error so far, after each write; finished at its end.
    private let logLines: AsyncStream<String>

    init(arguments: [String], executable: String? = nil, environment: [String: String] = [:]) throws {
        let errors = try ChildProcess.pipe()
        defer { close(errors.write) }
        pid = try ChildProcess.spawn(
            try executable ?? OspreyBinary.path, arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            error: .descriptor(errors.write))
        let (stream, continuation) = AsyncStream<Int?>.makeStream()
        let (logLines, logContinuation) = AsyncStream<String>.makeStream()
        self.logLines = logLines
        pending = Task {
            for await port in stream {
                guard let port else { break }
                return port
            }
            throw ServeProcessError.exitedBeforeListening
        }
        // Its standard error, read on a thread of its own until the process closes it.
        Thread { [shared, reader = errors.read] in
            defer { close(reader) }
            var chunk = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                let text = shared.log.withLock { log in
                    log += String(decoding: chunk[..<count], as: UTF8.self)
                    return log
                }
                logContinuation.yield(text)
                // The start line, logged once bound (`osprey serve listening`, `example listening`): with `--port 0`
                // it names the port the system chose.
                if let range = text.range(
                    of: #"address=127\.0\.0\.1:[0-9]+ .*listening"#, options: .regularExpression),
                    let port = Int(text[range].split(separator: ":")[1].prefix(while: \.isNumber))
                {
                    continuation.yield(port)
                }
            }
            continuation.yield(nil)
            logContinuation.finish()
        }.start()
        Thread { [shared, pid] in
            let status = ChildProcess.wait(pid).status
            let waiter = shared.exit.withLock { state in
                state.status = status
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: status)
        }.start()
    }

    /// The port it listens on, once it says so.
    var port: Int {
        get async throws { try await pending.value }
    }

    /// Returns once the standard error has said `text`.
    func waitForLog(_ text: String) async throws {
        for await chunk in logLines {
            if chunk.contains(text) { return }
        }
        throw ServeProcessError.exitedBeforeListening
    }

    /// Sends SIGTERM.
    func terminate() {
        kill(pid, SIGTERM)
    }

    /// Its exit status, once it has exited.
    var exitStatus: Int32 {
        get async {
            await withCheckedContinuation { continuation in
                let status = shared.exit.withLock { state -> Int32? in
                    if let status = state.status { return status }
                    state.waiter = continuation
                    return nil
                }
                if let status { continuation.resume(returning: status) }
            }
        }
    }

    deinit {
        if shared.exit.withLock({ $0.status == nil }) { kill(pid, SIGKILL) }
    }
}

enum ServeProcessError: Error {
    case exitedBeforeListening
}
