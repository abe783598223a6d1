import OspreyServer
import Testing

/// Addresses as the proxy reads them: parsed from text into their bytes, and resolved by the system's resolver (the
/// address bytes are read out of the resolver's socket addresses at their offsets).
@Suite struct AddressParsingTests {
    @Test("IPv4 and IPv6 text parse to their network-order bytes; anything else does not parse")
    func parsing() {
        #expect(IPAddress("192.0.2.10")?.bytes == [192, 0, 2, 10])
        #expect(IPAddress("[2001:db8::1]")?.bytes == [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])
        #expect(IPAddress("fe80::1%eth0")?.bytes == [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1])
        #expect(IPAddress("::ffff:127.0.0.1")?.bytes.suffix(6) == [0xff, 0xff, 127, 0, 0, 1])
        for text in ["", "127.1", "256.0.0.1", "1.2.3.4.5", "example.com", "::g", "[::1"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
        #expect(IPAddress("10.0.0.1")?.description == "10.0.0.1")
    }

    @Test("the system's resolver gives a literal back as it is and localhost as loopback addresses only")
    func systemResolver() async throws {
        let resolver = SystemHostResolver()
        #expect(try await resolver.addresses(of: "192.0.2.7") == [IPAddress("192.0.2.7")!])
        #expect(try await resolver.addresses(of: "::1") == [IPAddress("::1")!])
        let local = try await resolver.addresses(of: "localhost")
        #expect(!local.isEmpty)
        #expect(local.allSatisfy { AddressCategory($0) == .loopback }, "\(local)")
    }
}
