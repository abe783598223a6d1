/// What part of the network an address belongs to: the proxy fetches sources only from `.publicInternet` unless told
/// otherwise, so a URL cannot make it reach the machine itself, its private networks, or a cloud metadata service
/// (server-side request forgery; see docs/threat-model.md).
public enum AddressCategory: String, Sendable, CaseIterable {
    /// Routable on the internet.
    case publicInternet
    /// 127.0.0.0/8, ::1.
    case loopback
    /// RFC 1918 (10/8, 172.16/12, 192.168/16) and IPv6 unique local addresses (fc00::/7).
    case privateNetwork
    /// 169.254/16, fe80::/10.
    case linkLocal
    /// Carrier-grade NAT, RFC 6598: 100.64/10.
    case sharedAddressSpace
    /// 224/4, ff00::/8.
    case multicast
    /// Cloud instance metadata services: 169.254.169.254 (AWS, GCP, Azure, Oracle, DigitalOcean, ...),
    /// fd00:ec2::254 (AWS over IPv6), 100.100.100.200 (Alibaba Cloud).
    case cloudMetadata
    /// 0.0.0.0/8 and ::, which reach the local host on many systems, and 255.255.255.255.
    case unspecified
    /// Not routable on the internet for other reasons: documentation and benchmarking ranges, 240/4, 192.0.0/24,
    /// 100::/64, 2001:db8::/32.
    case reserved

    /// The category of `address`. An IPv6 address that carries an IPv4 one (mapped `::ffff:a.b.c.d`, translated
    /// `::ffff:0:a.b.c.d`, the NAT64 prefixes `64:ff9b::/96` and `64:ff9b:1::/96`, 6to4 `2002::/16`, deprecated
    /// compatible `::a.b.c.d`) is the category of that IPv4 address, since that is where a connection to it ends up.
    public init(_ address: IPAddress) {
        if address.isIPv4 {
            self = Self.ipv4(address.bytes)
        } else if let embedded = Self.embeddedIPv4(address) {
            self = Self.ipv4(embedded)
        } else {
            self = Self.ipv6(address)
        }
    }

    private static func ipv4(_ b: [UInt8]) -> AddressCategory {
        switch (b[0], b[1], b[2], b[3]) {
        case (169, 254, 169, 254), (100, 100, 100, 200): .cloudMetadata
        case (255, 255, 255, 255): .unspecified
        case (0, _, _, _): .unspecified
        case (127, _, _, _): .loopback
        case (10, _, _, _), (192, 168, _, _): .privateNetwork
        case (172, let second, _, _) where (16...31).contains(second): .privateNetwork
        case (169, 254, _, _): .linkLocal
        case (100, let second, _, _) where (64...127).contains(second): .sharedAddressSpace
        case (224...239, _, _, _): .multicast
        case (240...255, _, _, _): .reserved
        case (192, 0, 0, _), (192, 0, 2, _), (198, 51, 100, _), (203, 0, 113, _): .reserved
        case (198, let second, _, _) where second == 18 || second == 19: .reserved
        default: .publicInternet
        }
    }

    /// The IPv4 address inside an IPv6 one, for the forms that route to it.
    private static func embeddedIPv4(_ address: IPAddress) -> [UInt8]? {
        let b = address.bytes
        let tail = Array(b[12..<16])
        if address.hasPrefix([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + [0, 0, 0, 0], length: 96) {
            return tail  // ::ffff:a.b.c.d
        }
        if address.hasPrefix([UInt8](repeating: 0, count: 8) + [0xFF, 0xFF, 0, 0] + [0, 0, 0, 0], length: 96) {
            return tail  // ::ffff:0:a.b.c.d (IPv4-translated, SIIT)
        }
        if address.hasPrefix([0, 0x64, 0xFF, 0x9B] + [UInt8](repeating: 0, count: 12), length: 96) {
            return tail  // 64:ff9b::a.b.c.d (NAT64)
        }
        if address.hasPrefix([0, 0x64, 0xFF, 0x9B, 0, 1] + [UInt8](repeating: 0, count: 10), length: 96) {
            return tail  // 64:ff9b:1::a.b.c.d (local-use NAT64, with the address in its last 32 bits)
        }
        if address.hasPrefix([0x20, 0x02] + [UInt8](repeating: 0, count: 14), length: 16) {
            return Array(b[2..<6])  // 2002:aabb:ccdd::
        }
        if address.hasPrefix([UInt8](repeating: 0, count: 16), length: 96), tail != [0, 0, 0, 0], tail != [0, 0, 0, 1] {
            return tail  // ::a.b.c.d (deprecated, but still parsed)
        }
        return nil
    }

    private static func ipv6(_ address: IPAddress) -> AddressCategory {
        func prefix(_ head: [UInt8], _ length: Int) -> Bool {
            address.hasPrefix(head + [UInt8](repeating: 0, count: 16 - head.count), length: length)
        }
        if address.bytes == [UInt8](repeating: 0, count: 16) { return .unspecified }
        if address.bytes == [UInt8](repeating: 0, count: 15) + [1] { return .loopback }
        if address.bytes == [0xFD, 0x00, 0x0E, 0xC2] + [UInt8](repeating: 0, count: 10) + [0x02, 0x54] {
            return .cloudMetadata
        }
        if prefix([0xFC], 7) { return .privateNetwork }
        if prefix([0xFE, 0x80], 10) { return .linkLocal }
        if prefix([0xFF], 8) { return .multicast }
        if prefix([0x20, 0x01, 0x0D, 0xB8], 32) || prefix([0x01, 0x00], 64) { return .reserved }
        // The rest of local-use NAT64 (the IPv4 address spread over other bits): where it leads is the translator's
        // choice, not the internet's.
        if prefix([0, 0x64, 0xFF, 0x9B, 0, 1], 48) { return .reserved }
        return .publicInternet
    }
}
