import ArgumentParser
import FoundationEssentials
import Osprey

/// `osprey prefetch [-i FILE|-]`: warms the disk cache for a list of URLs through `ImagePrefetcher`.
struct PrefetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Load a list of URLs into the cache, at low priority.",
        discussion: """
            Reads URLs one per line from FILE (a file, a pipe, /dev/stdin, <(cmd); standard input with - or without \
            -i); blank lines and lines starting with # are ignored, and a line that is not a URL is reported on \
            standard error with its number and counted as failed. URLs already cached are skipped. Prints a \
            summary: finished (loaded and written to the disk cache), skipped, failed, not stored (loaded, but the \
            disk cache could not keep it: a full disk, an unwritable directory, or the origin's no-store), bytes \
            downloaded, time; with --json, {"finished","skipped","failed","notStored","bytes","ms"}. Exits 0 when \
            every URL is in the cache, 1 when any failed or was not stored, 2 for a usage error.

            Examples:
              osprey prefetch -i urls.txt
              grep -o 'https://[^"]*\\.jpg' page.html | osprey prefetch --max-concurrent 8 --json
            """
    )

    @Option(name: [.short, .customLong("input")], help: "File of URLs, one per line; - for standard input.")
    var input = "-"

    @Flag(help: "Print the summary as JSON.")
    var json = false

    @Flag(help: "No progress bar (it is only drawn on a terminal anyway).")
    var quiet = false

    @OptionGroup var loading: LoadingOptions

    func validate() throws {
        try URLList.checkReadable(input)
    }

    func run() async throws {
        // A line that is not a URL is reported and counted as failed; the others are prefetched all the same.
        let list = try URLList.read(input)
        for rejected in list.rejected { printError(rejected.message) }
        let urls = list.entries.map(\.request.url)
        let manager = try loading.makeManager()
        // More loads under way than downloads, as fetch keeps (LoadingOptions.loadsUnderWay says why).
        let prefetcher = ImagePrefetcher(
            manager: manager, maxConcurrentPrefetches: LoadingOptions.loadsUnderWay, options: loading.requestOptions)
        let started = ContinuousClock.now
        let display = TerminalProgress(total: urls.count, verb: "prefetched", quiet: quiet)
        let summary = await prefetcher.prefetch(urls) { counts in
            display.setCounts(done: counts.completed, failed: counts.failed + counts.notStored)
        }
        display.finish()
        await manager.finishRun()
        let ms = Int(FetchCommand.milliseconds(since: started).rounded())
        if json {
            var line = JSONLine()
            line.add("finished", summary.finished)
            line.add("skipped", summary.skipped)
            line.add("failed", summary.failed + list.rejected.count)
            line.add("notStored", summary.notStored)
            line.add("bytes", summary.bytes)
            line.add("ms", ms)
            print(line.text)
        } else {
            print(
                "\(summary.finished) finished, \(summary.skipped) skipped, "
                    + "\(summary.failed + list.rejected.count) failed, "
                    + "\(summary.notStored) not stored, \(summary.bytes) bytes in \(ms) ms")
        }
        if summary.failed > 0 || summary.notStored > 0 || !list.rejected.isEmpty { throw ExitCode(1) }
    }
}
