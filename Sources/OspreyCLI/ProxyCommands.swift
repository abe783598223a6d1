import ArgumentParser
import OspreyCommandLine

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `osprey serve`: parsed here, so that a mistake is reported at once and the help is whole, then run by
/// `osprey-proxy` (``ProxyExecutable``), which parses the same options again.
struct ServeCommand: ParsableCommand {
    static let configuration = ServeOptions.configuration

    @OptionGroup var options: ServeOptions

    func run() throws {
        try ProxyExecutable.run(subcommand: Self.configuration.commandName!)
    }
}

/// `osprey sign`: parsed here and run by `osprey-proxy`, as ``ServeCommand`` is.
struct SignCommand: ParsableCommand {
    static let configuration = SignOptions.configuration

    @OptionGroup var options: SignOptions

    func run() throws {
        try ProxyExecutable.run(subcommand: Self.configuration.commandName!)
    }
}

/// `osprey-proxy`, the executable that runs `serve` and `sign`. The server (Hummingbird, swift-prometheus,
/// swift-service-lifecycle, the proxy itself) is linked into it alone: linked into `osprey`, its relocations and
/// protocol-conformance records cost the start of every command, 0.3 ms of `osprey --version`'s 5
/// (docs/benchmarks.md).
///
/// `osprey` replaces itself with it (`execv`: the same process, so signals, the exit status and standard streams are
/// the server's own), passing the subcommand and the arguments after it unchanged.
enum ProxyExecutable {
    static let name = "osprey-proxy"

    /// Where it is looked for, in order, given the path of the running `osprey`: beside it (a build directory), then in
    /// `../libexec/osprey/` (where `make install` puts it).
    static func candidates(besides executable: String) -> [String] {
        let directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        let prefix = directory.isEmpty ? "." : directory
        return [prefix + "/" + name, prefix + "/../libexec/osprey/" + name]
    }

    /// Runs `osprey-proxy subcommand ...` in this process's place; when that cannot be done, says why on standard error
    /// and fails with exit status 1.
    static func run(subcommand: String) throws {
        do {
            try replaceProcess(subcommand: subcommand)
        } catch {
            printError("osprey: " + error.message)
            throw ExitCode(1)
        }
    }

    /// Replaces this process with `osprey-proxy subcommand ...`, the arguments after `subcommand` passed on as given.
    ///
    /// - Throws: ``CommandError`` when no `osprey-proxy` is found or it cannot be run; it returns only then.
    static func replaceProcess(subcommand: String) throws(CommandError) {
        let arguments = CommandLine.arguments
        // `osprey` takes no option before its subcommand but --help and --version, which do not get here: the first
        // argument spelled as the subcommand is the subcommand.
        guard let position = arguments.dropFirst().firstIndex(of: subcommand) else {
            throw CommandError(message: "\(subcommand): the command line has no '\(subcommand)'")
        }
        let searched = candidates(besides: runningExecutable() ?? arguments[0])
        guard let path = searched.first(where: { access($0, X_OK) == 0 }) else {
            throw CommandError(
                message: "\(subcommand) is run by \(name), which is not installed beside osprey (looked at "
                    + searched.joined(separator: ", ") + ")")
        }
        let argv = [path, subcommand] + arguments[(position + 1)...]
        var pointers = argv.map { strdup($0) }
        pointers.append(nil)
        execv(path, pointers)
        let reason = String(cString: strerror(errno))
        for pointer in pointers { free(pointer) }
        throw CommandError(message: "cannot run \(path): \(reason)")
    }

    /// The path of the running executable, as the kernel knows it (not `argv[0]`, which a shell may give bare).
    private static func runningExecutable() -> String? {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #elseif canImport(Darwin)
        var size: UInt32 = 0
        _ = _NSGetExecutablePath(nil, &size)
        var buffer = [CChar](repeating: 0, count: Int(size) + 1)
        guard _NSGetExecutablePath(&buffer, &size) == 0 else { return nil }
        return String(cString: buffer)
        #else
        return nil
        #endif
    }
}
