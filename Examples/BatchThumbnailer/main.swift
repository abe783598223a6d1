import Foundation
import Osprey
import OspreyCodecs

/// A batch thumbnailer on the library: the prefetcher warms the disk cache with every URL first (bytes only, nothing
/// decoded, a few at a time), then the manager makes a 256 px WebP of each from the cache — one download per URL
/// however often the batch runs. Prints one line per URL and exits 1 when any failed.
///
/// ```sh
/// swift run BatchThumbnailerExample thumbs https://example.com/a.jpg https://example.com/b.png
/// ```
///
/// `EXAMPLE_CACHE_DIR` picks the cache directory (the platform's cache directory by default).
@main
struct BatchThumbnailerExample {
    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: BatchThumbnailerExample OUTPUT_DIRECTORY URL...\n".utf8))
            exit(2)
        }
        let output = arguments[0]
        let urls = arguments.dropFirst().compactMap(URL.init(string:))
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)

        var caching = ImageCache.Configuration(namespace: "thumbnailer")
        if let directory = ProcessInfo.processInfo.environment["EXAMPLE_CACHE_DIR"] {
            caching.disk.baseDirectory = directory
        }
        // The manager, its downloader and its threads live as long as the closure.
        let failures = try await withImageManager(cache: ImageCache(configuration: caching)) { manager in
            let warmed = await ImagePrefetcher(manager: manager).prefetch(urls)
            print("prefetched \(warmed.finished) of \(warmed.total), \(warmed.bytes) bytes")

            var failures = 0
            for (index, url) in urls.enumerated() {
                do {
                    let request = try ImageRequest(url: url, processors: [.resize(width: 256, height: 256)])
                    var options = EncodingOptions()
                    options.quality = 80
                    let result = try await manager.encodedImage(
                        for: request, as: ImageOutput(.format(.webp), options: options))
                    let path = "\(output)/\(index).webp"
                    try Data(result.encoded.bytes).write(to: URL(fileURLWithPath: path))
                    print(
                        "\(url) -> \(path) (\(result.encoded.bytes.count) bytes, from \(result.imageCacheType.map { "\($0)" } ?? "\(result.cacheType)"))"
                    )
                } catch {
                    failures += 1
                    print("\(url): \(error)")
                }
            }
            return failures
        }
        exit(failures == 0 ? 0 : 1)
    }
}
