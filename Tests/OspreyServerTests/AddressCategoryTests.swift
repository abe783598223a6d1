import OspreyServer
import Testing

/// The address categories the proxy's server-side request forgery checks rest on, and the host patterns.
@Suite struct AddressCategoryTests {
    @Test(
        "each address falls in its category",
        arguments: [
            ("8.8.8.8", AddressCategory.publicInternet), ("1.1.1.1", .publicInternet), ("172.32.0.1", .publicInternet),
            ("100.128.0.1", .publicInternet), ("127.0.0.1", .loopback), ("127.255.1.2", .loopback),
            ("10.1.2.3", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
            ("192.168.1.1", .privateNetwork), ("169.254.1.1", .linkLocal), ("169.254.169.254", .cloudMetadata),
            ("100.100.100.200", .cloudMetadata), ("100.64.0.1", .sharedAddressSpace),
            ("100.127.255.254", .sharedAddressSpace), ("224.0.0.1", .multicast), ("239.255.255.250", .multicast),
            ("0.0.0.0", .unspecified), ("0.1.2.3", .unspecified), ("255.255.255.255", .unspecified),
            ("240.0.0.1", .reserved), ("192.0.2.5", .reserved), ("198.51.100.7", .reserved),
            ("203.0.113.9", .reserved), ("198.18.0.1", .reserved), ("192.0.0.8", .reserved),
            ("2606:4700:4700::1111", .publicInternet), ("::1", .loopback), ("::", .unspecified),
            ("fd12:3456::1", .privateNetwork), ("fc00::1", .privateNetwork), ("fe80::1", .linkLocal),
            ("[fe80::1%eth0]", .linkLocal), ("ff02::1", .multicast), ("fd00:ec2::254", .cloudMetadata),
            ("2001:db8::1", .reserved), ("100::1", .reserved),
            // IPv6 forms that carry an IPv4 address are what that address is.
            ("::ffff:127.0.0.1", .loopback), ("::ffff:169.254.169.254", .cloudMetadata),
            ("::ffff:8.8.8.8", .publicInternet), ("64:ff9b::10.0.0.1", .privateNetwork),
            ("2002:7f00:1::", .loopback), ("::192.168.0.1", .privateNetwork),
            ("::ffff:0:127.0.0.1", .loopback), ("::ffff:0:169.254.169.254", .cloudMetadata),
            ("::ffff:0:8.8.8.8", .publicInternet), ("64:ff9b::127.0.0.1", .loopback),
            ("64:ff9b::7f00:1", .loopback), ("64:ff9b::169.254.169.254", .cloudMetadata),
            ("64:ff9b::8.8.8.8", .publicInternet), ("64:ff9b:1::10.0.0.1", .privateNetwork),
            ("64:ff9b:1:7f00:1::", .reserved),
        ])
    func categories(text: String, expected: AddressCategory) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressCategory(address) == expected)
    }

    @Test("only literal addresses parse; shorthand and names do not")
    func parsing() throws {
        for text in ["127.1", "example.com", "1.2.3.4.5", "256.0.0.1", "", "::g", "0x7f.0.0.1", "2130706433"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
        #expect(try #require(IPAddress("10.0.0.1")).bytes == [10, 0, 0, 1])
        #expect(try #require(IPAddress("[::1]")).bytes == [UInt8](repeating: 0, count: 15) + [1])
        #expect(IPAddress("2001:0db8:0000::0001")?.description == "2001:db8::1")
        #expect(IPAddress("192.168.0.1")?.description == "192.168.0.1")
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
    }

    @Test("host patterns: exact names, and *.domain for subdomains only")
    func hostPatterns() throws {
        let exact = try #require(HostPattern("Images.Example.com."))
        #expect(exact.matches("images.example.com") && exact.matches("IMAGES.example.COM."))
        #expect(!exact.matches("cdn.images.example.com") && !exact.matches("example.com"))
        let wildcard = try #require(HostPattern("*.example.com"))
        #expect(wildcard.matches("a.example.com") && wildcard.matches("a.b.example.com"))
        #expect(!wildcard.matches("example.com") && !wildcard.matches("badexample.com"))
        #expect(!wildcard.matches("example.com.evil.net"))
        #expect(wildcard.description == "*.example.com")
        for bad in ["", "*", "*.", "a.*.com", "exa mple.com", ".example.com", "a..b", "http://x.com"] {
            #expect(HostPattern(bad) == nil, "\(bad)")
        }
    }
}
