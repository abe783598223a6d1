import Foundation

/// A forward proxy for tests that go through one: Debian's tinyproxy (`make test` installs it), on `127.0.0.1` and a
/// free port, logging every request line it is sent, started for one test and stopped after it.
///
/// ```swift
/// try await withForwardProxy { proxy in
///     // ... https_proxy=proxy.url ...
///     #expect(proxy.requestLines().contains("CONNECT 127.0.0.1:8443 HTTP/1.1"))
/// }
/// ```
public struct ForwardProxy: Sendable {
    /// The tinyproxy executable, when it is installed.
    public static let executable = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Whether CI asked for the proxy tests to run (`OSPREY_REQUIRE_TINYPROXY=1`): then a missing tinyproxy fails them.
    public static let isRequired = ProcessInfo.processInfo.environment["OSPREY_REQUIRE_TINYPROXY"] == "1"

    /// The forward proxy (tinyproxy) is not installed or did not start.
    public struct Unavailable: Error, CustomStringConvertible {
        /// What went wrong, in a sentence for logs and error messages.
        public var description: String { "tinyproxy is not installed (apt-get install tinyproxy; make test does)" }
    }

    /// The port it listens on.
    public let port: Int
    let log: String

    /// `http://127.0.0.1:PORT`, for `http_proxy` and `https_proxy`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// The request lines it was sent, in order: `CONNECT host:port HTTP/1.1` for a tunnel, `GET http://… HTTP/1.1`
    /// for a request in absolute form.
    public func requestLines() -> [String] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "Request (file descriptor ") else { return nil }
            return line[range.upperBound...].split(separator: ":", maxSplits: 1).last.map {
                $0.trimmingCharacters(in: .whitespaces)
            }
        }
    }
}

/// Runs `body` with a tinyproxy started for it, stopped after it.
public func withForwardProxy<Result>(_ body: (ForwardProxy) async throws -> Result) async throws -> Result {
    guard let executable = ForwardProxy.executable else { throw ForwardProxy.Unavailable() }
    let directory = NSTemporaryDirectory() + "osprey-tinyproxy-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    // World-readable: tinyproxy may drop to another user to write its log.
    try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let port = try freePort()
    let log = directory + "/tinyproxy.log"
    let configuration = """
        Port \(port)
        Listen 127.0.0.1
        Timeout 60
        LogFile "\(log)"
        LogLevel Connect
        MaxClients 200
        """
    try configuration.write(toFile: directory + "/tinyproxy.conf", atomically: true, encoding: .utf8)
    let pid = try ChildProcess.spawn(executable, ["-d", "-c", directory + "/tinyproxy.conf"])
    defer {
        // tinyproxy in the foreground notes SIGTERM and exits when its loop next wakes, which may be never.
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }
    // Ready once it accepts a connection (a few milliseconds; at most five seconds).
    var ready = false
    for _ in 0..<500 where !ready {
        ready = canConnect(port: port)
        if !ready { try await Task.sleep(for: .milliseconds(10)) }
    }
    guard ready else { throw ForwardProxy.Unavailable() }
    return try await body(ForwardProxy(port: port, log: log))
}

/// A port nothing listens on now, from the system.
private func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
        }
    }
    guard bound else { throw ForwardProxy.Unavailable() }
    return Int(UInt16(bigEndian: address.sin_port))
}

private func canConnect(port: Int) -> Bool {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
