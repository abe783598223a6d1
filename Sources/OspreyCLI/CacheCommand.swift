import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCommandLine

/// `osprey cache info|clean|clear|ls`: the disk cache `fetch` and `prefetch` use.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Inspect and tidy the disk cache.",
        discussion: """
            The cache is the library's default one in --cache-dir (else $OSPREY_CACHE_DIR, else ~/.cache): \
            <dir>/osprey/default.

            Examples:
              osprey cache info
              osprey cache ls --json | jq -s 'map(.bytes) | add'
              osprey cache clean --cache-dir /var/cache/images --max-age 86400
            """,
        subcommands: [Info.self, Clean.self, Clear.self, List.self]
    )

    /// Where the cache is, and how to print: what every `cache` subcommand takes.
    struct Location: ParsableArguments {
        @OptionGroup var cacheDirectory: CacheDirectoryOption

        @Option(
            name: .customLong("size-limit"), help: "Size limit in bytes (default: the library's, 1 GiB).",
            transform: DecimalArgument.integer)
        var sizeLimit: Int?

        @Option(
            name: .customLong("max-age"),
            help: "Seconds an entry may go unread (default: the library's, 7 days).", transform: DecimalArgument.integer
        )
        var maxAge: Int?

        @Flag(help: "Print JSON.")
        var json = false

        func validate() throws {
            if let sizeLimit, sizeLimit < 0 { throw ValidationError("--size-limit must be 0 or more bytes") }
            if let maxAge, maxAge < 0 { throw ValidationError("--max-age must be 0 or more seconds") }
        }

        /// The cache's configuration: the directory from the flag, the environment or the default; the limits
        /// from the flags or the library's defaults.
        var configuration: DiskCache.Configuration {
            var configuration = DiskCache.Configuration()
            configuration.baseDirectory = cacheDirectory.resolved()
            configuration.cleaningInterval = nil
            if let sizeLimit { configuration.sizeLimit = sizeLimit }
            if let maxAge { configuration.maximumAge = .seconds(maxAge) }
            return configuration
        }

        /// The cache, opened to be changed; refused when its directory cannot be used, as the warning before says
        /// (from memory, a clean or a clear would remove nothing and report it done).
        func open() throws -> DiskCache {
            let cache = DiskCache(configuration: configuration)
            guard !cache.isMemoryOnly else {
                printError("osprey: cannot use the disk cache at \(cache.configuration.directory)")
                throw ExitCode(1)
            }
            return cache
        }

        /// The cache opened for looking only: nothing is created or written, and a cache in a directory this user
        /// cannot write (a read-only mount) is read as it is. Refused when its index is there but cannot be read, as
        /// the warning before says (from memory, the cache would look empty); a directory with no index yet is an
        /// empty cache.
        func openForReading() throws -> DiskCache {
            var configuration = configuration
            configuration.isReadOnly = true
            let cache = DiskCache(configuration: configuration)
            guard !cache.hasUnreadableIndex else {
                printError("osprey: cannot read the disk cache at \(cache.configuration.directory)")
                throw ExitCode(1)
            }
            return cache
        }
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Print the cache's path, entries, size and limits.",
            discussion: """
                With --json: {"path","count","bytes","limitBytes","maxAgeSeconds"} (maxAgeSeconds absent when \
                entries never expire).

                Example: osprey cache info --json --cache-dir /var/cache/images
                """)

        @OptionGroup var location: Location

        func run() async throws {
            let cache = try location.openForReading()
            let configuration = cache.configuration
            let totals = await cache.totals()
            let maxAge = configuration.maximumAge.map { Int($0.components.seconds) }
            if location.json {
                var line = JSONLine()
                line.add("path", configuration.directory)
                line.add("count", totals.count)
                line.add("bytes", totals.size)
                line.add("limitBytes", configuration.sizeLimit)
                line.add("maxAgeSeconds", maxAge)
                print(line.text)
            } else {
                print("path:    \(configuration.directory)")
                print("entries: \(totals.count)")
                print("size:    \(totals.size) bytes (limit \(configuration.sizeLimit))")
                print("max age: " + (maxAge.map { "\($0) s since last read" } ?? "none"))
            }
        }
    }

    struct Clean: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clean",
            abstract: "Apply the age and size limits now; print what was removed.",
            discussion: """
                With --json: {"removed","bytes"}.

                Example: osprey cache clean --size-limit 500000000 --max-age 86400
                """)

        @OptionGroup var location: Location

        func run() async throws {
            let events = try await location.open().clean()
            CacheCommand.report(
                removed: events.reduce(0) { $0 + $1.keys.count }, bytes: events.reduce(0) { $0 + $1.bytes },
                json: location.json)
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear",
            abstract: "Remove every entry; print how many.",
            discussion: """
                With --json: {"removed","bytes"}.

                Example: osprey cache clear --cache-dir /tmp/thumbs
                """)

        @OptionGroup var location: Location

        func run() async throws {
            let cache = try location.open()
            let before = await cache.totals()
            await cache.removeAll()
            CacheCommand.report(removed: before.count, bytes: before.size, json: location.json)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls",
            abstract: "List the entries, least recently read first: size, last read, key.",
            discussion: """
                With --json, one object per entry: {"key","stored","file","bytes","lastAccess"}: "stored" is "index" for \
                an entry kept with the index (small ones, in its pack files) or "file", "file" the file's name in the \
                cache directory (file entries only), "lastAccess" ISO 8601.

                Example: osprey cache ls --json | jq -r 'select(.bytes > 1000000) | .key'
                """)

        @OptionGroup var location: Location

        func run() async throws {
            for entry in try await location.openForReading().allEntries() {
                let date = Date(timeIntervalSince1970: entry.lastAccess.seconds).formatted(.iso8601)
                if location.json {
                    var line = JSONLine()
                    line.add("key", entry.key)
                    line.add("stored", entry.isInIndex ? "index" : "file")
                    line.add("file", entry.isInIndex ? nil : entry.fileName)
                    line.add("bytes", entry.size)
                    line.add("lastAccess", date)
                    print(line.text)
                } else {
                    print("\(entry.size)\t\(date)\t\(entry.key ?? entry.fileName)")
                }
            }
        }
    }

    static func report(removed: Int, bytes: Int, json: Bool) {
        if json {
            var line = JSONLine()
            line.add("removed", removed)
            line.add("bytes", bytes)
            print(line.text)
        } else {
            print("removed \(removed) entr\(removed == 1 ? "y" : "ies") (\(bytes) bytes)")
        }
    }
}
