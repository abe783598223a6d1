#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16), parsed from text with `inet_pton` (no DNS, no shorthand like
/// `127.1`), for the proxy's checks on where a source is fetched from (docs/threat-model.md).
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6, network order.
    public let bytes: [UInt8]

    /// Parses dotted IPv4 or IPv6 text (brackets and a zone index such as `%eth0` allowed); `nil` otherwise.
    public init?(_ text: String) {
        var text = Substring(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        // Into plain byte arrays, the sizes of in_addr and in6_addr.
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, String(text), &v4) == 1 {
            bytes = v4
            return
        }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, String(text), &v6) == 1 {
            bytes = v6
            return
        }
        return nil
    }

    /// An address from its 4 or 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Whether it is an IPv4 address (four bytes).
    public var isIPv4: Bool { bytes.count == 4 }

    /// The value as logs and messages print it.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isIPv4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether the first `length` bits equal those of `prefix` (an address of the same family).
    func hasPrefix(_ prefix: [UInt8], length: Int) -> Bool {
        guard prefix.count == bytes.count else { return false }
        for bit in 0..<length {
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if bytes[bit / 8] & mask != prefix[bit / 8] & mask { return false }
        }
        return true
    }
}
