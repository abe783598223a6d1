import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// `osprey fetch URL... [-i FILE] [-o DIR]`: loads each URL through `ImageManager` (so a second run is served from the
/// disk cache) and writes the image to a file.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download images through the cache and write them to files.",
        discussion: """
            Each image is written to DIR under a name taken from its URL (cat.jpg), made unique (cat-1.jpg) unless \
            --force. One line per URL on standard output: where the image came from (network, disk or memory), its \
            size, format, bytes and time, and why it is not in the disk cache when it could not be stored; with \
            --json, one object per URL: \
            {"url","status","source","file","format","width","height","frames","bytes","cached","cacheError","ms",\
            "error"} ("cached": whether the image is in the disk cache now; "cacheError": why a download was not \
            stored there). Exits 0 when every URL was fetched, 1 when any failed (the others still complete), 2 for \
            a usage error.

            -i FILE adds the URLs it lists, one per line (blank lines and lines starting with # skipped), after \
            those given as arguments; a line that is not a URL is an error line of its own (its number said), and \
            the rest are fetched. A list of thousands is read from a file far faster than from the command \
            line.

            Examples:
              osprey fetch https://example.com/cat.jpg
              osprey fetch -i urls.txt -o images --json
              osprey fetch -o thumbs --resize 256x256 --fit cover --format webp URL1 URL2
              osprey fetch --json --header 'Authorization: Bearer T' URL | jq .source
            """
    )

    @Argument(help: "http or https URLs of images.")
    var urls: [String] = []

    @Option(
        name: [.short, .customLong("input")],
        help: "File of more URLs, one per line; - for standard input.")
    var input: String?

    @Option(name: [.short, .customLong("output")], help: "Directory to write into (default: the current one).")
    var outputDirectory = "."

    @Option(help: "Fit the image to WxH (or W, or xH) pixels.", transform: ResizeSpec.parse)
    var resize: ResizeSpec?

    @Option(help: "How --resize fits: inside (keep all, default), cover (fill and crop) or fill (stretch).")
    var fit: FitArgument?

    @Option(help: "Format written: jpeg, png, webp, gif, or original (the default: the bytes as downloaded).")
    var format: FetchFormat = .original

    @Option(help: ArgumentHelp(QualityArgument.help), transform: QualityArgument.parse)
    var quality: QualityArgument?

    @Flag(help: "Overwrite existing files instead of choosing a new name.")
    var force = false

    @Flag(
        help: """
            Decode every image in full. Without it, an image written as downloaded (no --format, no --resize) is \
            only checked by its header, and never decoded.
            """)
    var verify = false

    @Flag(help: "Print one JSON object per URL.")
    var json = false

    @Flag(help: "No progress bars (they are only drawn on a terminal anyway).")
    var quiet = false

    @OptionGroup var loading: LoadingOptions

    @OptionGroup var metadata: MetadataOptions

    func validate() throws {
        if fit != nil && resize == nil { throw ValidationError("--fit needs --resize WxH") }
        if quality != nil && !format.takesQuality && resize == nil {
            throw ValidationError("--quality applies to --format jpeg, webp, avif or jxl")
        }
        if let input {
            try URLList.checkReadable(input)
        } else if urls.isEmpty {
            throw ValidationError("give the URLs to fetch, or -i FILE listing them")
        }
        for url in urls {
            do {
                _ = try ImageRequest(string: url)
            } catch {
                throw ValidationError("\(error): give an absolute http or https URL")
            }
        }
        try Self.checkOutput(directory: outputDirectory)
    }

    /// Fails unless `directory` is a writable directory, or can be created (its nearest existing ancestor is one).
    static func checkOutput(directory: String) throws {
        var isDirectory = false
        let target = URL(fileURLWithPath: directory).standardizedFileURL
        var existing = target
        while !FileManager.default.fileExists(atPath: existing.path, isDirectory: &isDirectory) {
            existing.deleteLastPathComponent()
        }
        guard isDirectory else {
            let what = existing == target ? "-o \(directory)" : existing.path
            throw ValidationError("\(what) is a file, not a directory: give a directory with -o")
        }
        guard FileManager.default.isWritableFile(atPath: existing.path) else {
            throw ValidationError("cannot write in \(existing.path): choose another output directory with -o")
        }
    }

    func run() async throws {
        // A list is read before anything is written; a line of it that is not a URL is reported and counted as failed,
        // and the others are fetched all the same.
        let list = try input.map(URLList.read) ?? (entries: [], rejected: [])
        let listed = list.entries
        let urls = self.urls + listed.map(\.text)
        do throws(CommandError) {
            try OutputFile.createDirectory(outputDirectory)
        } catch {
            printError(error.message)
            throw ExitCode(2)
        }
        OutputFile.removeLeftovers(in: outputDirectory)
        let manager = try loading.makeManager(colorHandling: metadata.colorHandling)
        let names = OutputNames(directory: outputDirectory, overwrites: force)
        let processors: [any ImageProcessing] = resize.map { [$0.processor(fit: fit?.fit ?? .inside)] } ?? []
        let options = loading.requestOptions
        var requests = try self.urls.map { try ImageRequest(string: $0) } + listed.map(\.request)
        for index in requests.indices {
            requests[index].options = options
            requests[index].processors = processors
        }
        var failures = list.rejected.count
        for rejected in list.rejected {
            var line = FetchLine(url: rejected.text, ms: 0)
            line.error = rejected.message
            print(json ? line.json : line.text)
        }
        let progress = TerminalProgress(total: requests.count, verb: "fetched", quiet: quiet)
        defer { progress.finish() }
        // The downloader runs --max-concurrent transfers at once, in --lifo or FIFO order, from a queue the loads fill:
        // up to 256 loads are under way (cache hits and decodes included), each printed as it ends.
        // The bytes as downloaded need no decode: a data-only load checks their header and stores them.
        let writesOriginal = format == .original && resize == nil && !verify
        if writesOriginal, options.isDisjoint(with: [.refreshCached, .fromLoaderOnly, .fromCacheOnly]) {
            // Which URLs the cache holds, asked once for the list: the others go straight to the origin instead of
            // each looking the cache up on its own.
            let cached = await manager.urlsWithCachedData(requests.map(\.url))
            for index in requests.indices where !cached.contains(requests[index].url) {
                requests[index].options.insert(.fromLoaderOnly)
            }
        }
        try await withThrowingTaskGroup(of: (Int, FetchLine).self) { group in
            var next = 0
            func startNext() {
                guard next < requests.count else { return }
                let index = next
                let (request, url) = (requests[index], urls[index])
                next += 1
                group.addTask {
                    let started = ContinuousClock.now
                    progress.start(index, label: request.url.lastPathComponent)
                    let outcome =
                        writesOriginal
                        ? await Self.data(for: request, manager: manager, index: index, progress: progress)
                        : await Self.image(for: request, manager: manager, index: index, progress: progress)
                    var line = FetchLine(url: url, ms: Self.milliseconds(since: started))
                    // Each load writes its own file, so files are written as loads end, side by side, while the loop
                    // below only starts loads and prints.
                    await finish(outcome, into: &line, names: names, manager: manager)
                    return (index, line)
                }
            }
            for _ in 0..<min(LoadingOptions.loadsUnderWay, requests.count) { startNext() }
            while let (index, line) = try await group.next() {
                startNext()
                if line.error != nil { failures += 1 }
                progress.complete(index, failed: line.error != nil, line: json ? line.json : line.text)
            }
        }
        await manager.finishRun()
        if failures > 0 { throw ExitCode(1) }
    }

    /// What a load brought: a decoded image, or the bytes alone.
    enum Loaded: Sendable {
        case image(ImageResult)
        case data(DataResult)
    }

    /// Loads and decodes `request`, reporting its progress on line `index`.
    static func image(
        for request: ImageRequest, manager: ImageManager, index: Int, progress: TerminalProgress
    ) async -> Result<Loaded, ImageError> {
        var outcome: Result<ImageResult, ImageError> = .failure(.cancelled)
        for await event in manager.task(for: request).events {
            switch event {
            case .progress(let report):
                progress.update(index, received: report.receivedBytes, expected: report.expectedBytes)
            case .finished(let finished): outcome = finished
            case .preview: break
            }
        }
        return outcome.map(Loaded.image)
    }

    /// Loads the bytes of `request` without decoding them, reporting progress on line `index`.
    static func data(
        for request: ImageRequest, manager: ImageManager, index: Int, progress: TerminalProgress
    ) async -> Result<Loaded, ImageError> {
        // Without bars to draw, no progress is asked for: each report costs the downloader a copy of the part.
        var report: (@Sendable (DownloadProgress) -> Void)?
        if progress.isEnabled {
            report = { progress.update(index, received: $0.receivedBytes, expected: $0.expectedBytes) }
        }
        do throws(ImageError) {
            let result = try await manager.data(for: request, progress: report)
            return .success(.data(result))
        } catch {
            return .failure(error)
        }
    }

    /// Writes what a load brought into a file of its own, and says on `line` what was written, or why nothing was.
    private func finish(
        _ outcome: Result<Loaded, ImageError>, into line: inout FetchLine, names: OutputNames, manager: ImageManager
    ) async {
        do {
            switch try outcome.get() {
            case .image(let result):
                try write(result, line: &line, names: names)
                (line.cached, line.cacheError) = await Self.diskState(of: result, manager: manager)
            case .data(let result):
                try write(result, line: &line, names: names)
                (line.cached, line.cacheError) = Self.diskState(of: result)
            }
        } catch {
            line.error = Self.describe(error)
        }
    }

    /// Writes bytes loaded without decoding as they are; the size and frame count come from the header.
    private func write(_ result: DataResult, line: inout FetchLine, names: OutputNames) throws {
        let path = try names.write(result.data, for: result.url, format: result.header.format)
        line.source = Self.source(of: result.cacheType)
        line.file = path
        line.format = result.header.format.name
        let size = result.header.displaySize
        (line.width, line.height) = (size.width, size.height)
        line.frames = (try? ImageHeader.frames(in: result.data))?.count ?? 1
        line.bytes = result.data.count
    }

    /// Whether bytes loaded without decoding are in the disk cache now, and why not when their write failed or was
    /// forbidden.
    static func diskState(of result: DataResult) -> (Bool, String?) {
        diskState(result.cacheType, result.diskStore) ?? (false, nil)  // memory bytes: --memory-only
    }

    /// Whether a load's image is on disk from where it came and its store's outcome, and why not; `nil` for a memory
    /// hit, which says nothing of the disk.
    private static func diskState(
        _ cacheType: CacheType, _ store: DiskStoreOutcome?
    ) -> (Bool, String?)? {
        switch (cacheType, store) {
        case (.disk, _): (true, nil)
        case (_, .stored?): (true, nil)
        case (_, .failed(let error)?): (false, error.description)
        case (_, .forbiddenByOrigin?): (false, "the origin forbids storing it (Cache-Control: no-store)")
        case (.memory, nil): nil
        case (.notCached, nil): (false, nil)  // --no-cache or --memory-only
        }
    }

    /// Writes the image: its downloaded bytes when nothing asks for a change, else encoded.
    private func write(_ result: ImageResult, line: inout FetchLine, names: OutputNames) throws {
        let image = result.image
        let bytes: [UInt8]
        let written: ImageFormat
        if format == .original, resize == nil, let data = result.data {
            bytes = data
            written = ImageFormat(sniffing: data)
        } else {
            written = format.imageFormat ?? (image.sourceFormat == .unknown ? .png : image.sourceFormat)
            let output = ImageOutput(.format(written), options: metadata.applied(to: EncodingOptions()))
            do {
                bytes = try (quality?.applied(to: output) ?? output).encode(image).bytes
            } catch {
                throw CommandError(message: "cannot encode as \(written): \(error)")
            }
        }
        let path = try names.write(bytes, for: result.url, format: written)
        line.source = Self.source(of: result.cacheType)
        line.file = path
        line.format = written.name
        line.width = image.width
        line.height = image.height
        line.frames = image.frames.count
        line.bytes = bytes.count
    }

    /// Whether the image of `result` is in the disk cache now, and why not when its write failed or was forbidden.
    static func diskState(of result: ImageResult, manager: ImageManager) async -> (Bool, String?) {
        if let state = diskState(result.cacheType, result.diskStore) { return state }
        return (await manager.isCachedOnDisk(result.url), nil)
    }

    static func source(of cacheType: CacheType) -> String {
        switch cacheType {
        case .notCached: "network"
        case .disk: "disk"
        case .memory: "memory"
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as CommandError: error.message
        case let error as ImageError: error.description
        default: "\(error)"
        }
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }
}
