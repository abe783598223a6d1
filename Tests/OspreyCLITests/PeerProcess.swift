import Foundation
import OspreyTesting

#if canImport(Glibc)
import Glibc
#endif

/// A server of another project's (thumbor) run by a test: it is handed a socket already listening on 127.0.0.1 as
/// descriptor 3 (`--fd 3`), so requests made at once wait in the socket's backlog until it accepts them, with no
/// polling for readiness. Killed when the test is done.
final class PeerProcess {
    let port: Int
    private let pid: pid_t
    private var stopped = false

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts `executable arguments...` with a listening socket as descriptor 3 (and its output in `log`).
    init(_ executable: String, _ arguments: [String], log: String) throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0, listen(socket, 256) == 0 else {
            throw Failure(description: "bind/listen: \(String(cString: strerror(errno)))")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, socket, 3)
        if let closeFrom = ChildProcess.addCloseFrom { _ = closeFrom(&actions, 4) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let code = posix_spawn(&child, executable, &actions, nil, argv, envp)
        guard code == 0 else { throw Failure(description: "posix_spawn \(executable): \(code)") }
        pid = child
    }

    /// Stops it and waits for it.
    func stop() {
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    deinit { stop() }
}
