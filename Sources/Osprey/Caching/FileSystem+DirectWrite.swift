import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Large cache files written around the page cache, for a cache that asks (`writesAroundPageCache`: the proxy's). Its
// files are written once and seldom read soon after (it keeps what it decodes in memory), and no answer waits for a
// store, so copying a file into the page cache first only costs CPU on every store and evicts pages that readers use
// (docs/benchmarks.md, "Sources written around the page cache"). A direct write waits for the device, which is why it
// is not the default.
// Linux only: direct I/O needs O_DIRECT; elsewhere, and on a file system that refuses it, files are written as any
// other.
extension FileSystem {
    /// Files of at least this many bytes are written with `O_DIRECT` where the file system allows it.
    static let directWriteMinimum = 256 << 10

    /// The alignment direct writes keep, of memory, offsets and lengths: a page, a multiple of every logical block
    /// size a Linux block device has.
    static let directAlignment = 4096

    /// How many bytes one direct write copies through one aligned block.
    static let directBlockSize = 1 << 20

    /// Writes all of `buffer` to the new, empty file `descriptor` from offset 0 through aligned blocks with
    /// `O_DIRECT`; returns 0, the `errno` of the write that failed, or `nil` when the file system does not do direct
    /// writes (the descriptor is then as it was, for an ordinary write).
    static func writeDirect(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> Int32? {
        let flags = fcntl(descriptor, F_GETFL)
        guard let direct = directFlag, flags >= 0, fcntl(descriptor, F_SETFL, flags | direct) == 0 else { return nil }
        guard let block = DirectBlocks.take() else {
            _ = fcntl(descriptor, F_SETFL, flags)
            return nil
        }
        defer { DirectBlocks.give(block) }
        var offset = 0
        while offset < buffer.count {
            let count = min(directBlockSize, buffer.count - offset)
            // The last block is padded with zeros to the alignment, and the file cut to its size afterwards.
            let padded = (count + directAlignment - 1) & ~(directAlignment - 1)
            block.copyMemory(from: buffer.baseAddress! + offset, byteCount: count)
            if padded > count { (block + count).initializeMemory(as: UInt8.self, repeating: 0, count: padded - count) }
            var done = 0
            while done < padded {
                let written = pwrite(descriptor, block + done, padded - done, off_t(offset + done))
                if written > 0 {
                    done += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else if written < 0 && errno == EINVAL && offset == 0 && done == 0 {
                    // Opened, but the file system (or this device's alignment) refuses the write itself.
                    _ = fcntl(descriptor, F_SETFL, flags)
                    return nil
                } else {
                    return written < 0 ? errno : EIO
                }
            }
            offset += count
        }
        if buffer.count % directAlignment != 0 {
            while ftruncate(descriptor, off_t(buffer.count)) != 0 {
                if errno != EINTR { return errno }
            }
        }
        return 0
    }

    /// Linux's `O_DIRECT`, which the C library declares only to C code that defines `_GNU_SOURCE`: its value is the
    /// kernel's, per architecture (`nil` where direct writes are not done).
    static var directFlag: Int32? {
        #if os(Linux) && (arch(x86_64) || arch(i386) || arch(s390x) || arch(riscv64))
        0o40000
        #elseif os(Linux) && (arch(arm64) || arch(arm))
        0o200000
        #elseif os(Linux) && arch(powerpc64le)
        0o400000
        #else
        nil
        #endif
    }
}

/// The aligned blocks direct writes copy through (an array's bytes are not page-aligned, and `O_DIRECT` reads memory
/// at the device's alignment), kept for the next write: a new block's fresh pages would cost what writing around the
/// page cache saves. At most four are kept, one per writer at once; they are held as addresses, which are `Sendable`.
private enum DirectBlocks {
    private static let kept = Mutex<[UInt]>([])
    private static let keptLimit = 4

    /// A block of ``FileSystem/directBlockSize`` bytes aligned to ``FileSystem/directAlignment``; `nil` when none
    /// can be allocated.
    static func take() -> UnsafeMutableRawPointer? {
        if let address = kept.withLock({ $0.popLast() }) { return UnsafeMutableRawPointer(bitPattern: address) }
        var block: UnsafeMutableRawPointer?
        guard posix_memalign(&block, FileSystem.directAlignment, FileSystem.directBlockSize) == 0 else { return nil }
        return block
    }

    /// Returns `block` to the kept ones, or frees it when enough are kept.
    static func give(_ block: UnsafeMutableRawPointer) {
        let address = UInt(bitPattern: block)
        let isKept = kept.withLock { kept in
            guard kept.count < keptLimit else { return false }
            kept.append(address)
            return true
        }
        if !isKept { free(block) }
    }
}
