package import ArgumentParser
import FoundationEssentials
import Osprey

/// `--cache-dir DIR`: the directory holding the disk cache, shared by every command that touches it. The flag
/// overrides `OSPREY_CACHE_DIR`, which overrides the library's default (`$XDG_CACHE_HOME`, else `~/.cache`).
package struct CacheDirectoryOption: ParsableArguments {
    @Option(
        name: .customLong("cache-dir"),
        help: "Directory holding the disk cache (default: $OSPREY_CACHE_DIR, else the library's, ~/.cache).")
    package var path: String?

    package init() {}

    /// The directory the flag, `environment` or the default gives.
    package func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        path ?? environment["OSPREY_CACHE_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? DiskCache.Configuration.platformCacheDirectory
    }
}
