import OspreyTesting
import Testing

@testable import Osprey

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Large cache files are written around the page cache (`O_DIRECT`), through aligned blocks, the last one padded and
/// the file cut back to its size: every byte must land, at every size around the block and alignment boundaries.
@Suite struct FileSystemDirectWriteTests {
    let temporary = TemporaryDirectory()

    static func bytes(_ count: Int) -> [UInt8] {
        var generator = SplitMix64(seed: UInt64(count))
        let words = (0..<(count + 7) / 8).map { _ in generator.next() }
        return words.withUnsafeBytes { Array($0.prefix(count)) }
    }

    /// Sizes on either side of the direct-write minimum, the alignment and the block size.
    static let sizes: [Int] = [
        FileSystem.directWriteMinimum - 1, FileSystem.directWriteMinimum, FileSystem.directWriteMinimum + 1,
        FileSystem.directBlockSize - 1, FileSystem.directBlockSize, FileSystem.directBlockSize + 1,
        FileSystem.directBlockSize + FileSystem.directAlignment + 7, 3 * FileSystem.directBlockSize + 123,
    ]

    @Test("a temporary file holds exactly its bytes, written directly or not, at every size around the boundaries")
    func everyByteLands() throws {
        for size in Self.sizes {
            let bytes = Self.bytes(size)
            for direct in [true, false] {
                // When the bytes are written to a temporary file
                let path = try FileSystem.writeTemporary(bytes, in: temporary.path, direct: direct)

                // Then the file holds them and nothing more (the padded last block cut off)
                #expect(try FileSystem.read(path) == bytes, "\(size) bytes, direct \(direct)")
                FileSystem.remove(path)
            }
        }
    }

    #if os(Linux)
    @Test("on Linux the write is direct: the descriptor keeps O_DIRECT, and the kernel then refuses unaligned writes")
    func theWriteIsDirect() throws {
        // Given a new file in a directory on the test machine's disk
        let path = temporary.path + "/direct"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let bytes = Self.bytes(FileSystem.directBlockSize + 5)

        // When it is written directly
        let outcome = bytes.withUnsafeBytes { FileSystem.writeDirect(descriptor, $0) }

        // Then the write was direct and whole
        #expect(outcome == 0)
        let flag = try #require(FileSystem.directFlag)
        #expect(fcntl(descriptor, F_GETFL) & flag != 0)
        #expect(try FileSystem.read(path) == bytes)
        // And the flag is the kernel's O_DIRECT, not another: a write from an unaligned address is refused
        let unaligned = UnsafeMutableRawPointer.allocate(byteCount: 8192, alignment: 4096)
        defer { unaligned.deallocate() }
        #expect(pwrite(descriptor, unaligned + 1, 4096, 0) == -1 && errno == EINVAL)
    }
    #endif

    @Test("a cache that writes around the page cache reads an entry back whole, from a new cache on the same directory")
    func aCacheEntryWrittenDirectlyReadsBack() async throws {
        // Given a cache whose large entries are files
        var configuration = DiskCache.Configuration(namespace: "direct")
        configuration.baseDirectory = temporary.path
        configuration.cleaningInterval = nil
        configuration.writesAroundPageCache = true
        let bytes = Self.bytes(FileSystem.directBlockSize + 4099)

        // When an entry larger than the direct-write minimum is stored
        let cache = DiskCache(configuration: configuration)
        try await cache.store(bytes, forKey: "https://example.com/large.jpg", validators: .init())
        await cache.close()

        // Then another cache on the directory reads it back whole
        let reopened = DiskCache(configuration: configuration)
        #expect(await reopened.data(forKey: "https://example.com/large.jpg") == bytes)
        await reopened.close()
    }
}
