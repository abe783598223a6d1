import NIOPosix
public import Osprey

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolves a host name to the addresses it has.
public protocol HostResolving: Sendable {
    /// Every address of `host`, in the order the resolver prefers them.
    ///
    /// - Throws: `DownloadError.cannotConnect(reason:)` when it does not resolve.
    func addresses(of host: String) async throws(DownloadError) -> [IPAddress]
}

/// The system's resolver: `getaddrinfo`, on NIO's thread pool (it blocks).
public struct SystemHostResolver: HostResolving {
    /// Makes the resolver.
    public init() {}

    /// The addresses `host` resolves to (an IP literal: itself).
    public func addresses(of host: String) async throws(DownloadError) -> [IPAddress] {
        let result = try? await NIOThreadPool.singleton.runIfActive { Self.lookUp(host) }
        guard let result, !result.isEmpty else { throw .cannotConnect(reason: "the source's host does not resolve") }
        return result
    }

    private static func lookUp(_ host: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            next = info.pointee.ai_next
            guard let socketAddress = info.pointee.ai_addr else { continue }
            // The address bytes are read at their offsets (sockaddr_in: 4 after the family and port; sockaddr_in6: 8,
            // after the flow label), the same on Linux and the BSDs: Swift attributes the fields of these structs to
            // whichever module first included <netinet/in.h>, NIO's here, which this file cannot import.
            let raw = UnsafeRawPointer(socketAddress)
            let bytes: [UInt8]
            switch Int32(socketAddress.pointee.sa_family) {
            case AF_INET: bytes = Array(UnsafeRawBufferPointer(start: raw + 4, count: 4))
            case AF_INET6: bytes = Array(UnsafeRawBufferPointer(start: raw + 8, count: 16))
            default: continue
            }
            if let address = IPAddress(bytes: bytes), !addresses.contains(address) { addresses.append(address) }
        }
        return addresses
    }
}

/// Where the proxy may fetch sources from: the downloader asks it before every connection, the first and one after
/// each redirect, and connects to the address it returns (``Osprey/AddressResolving``), so the address checked is
/// the address connected to (docs/threat-model.md).
///
/// A host must match ``ServerConfiguration/allowedHosts`` (when there are any). Then every address the name resolves
/// to must be allowed: a public one, or a private one under ``ServerConfiguration/allowsPrivateNetworks``, or one of
/// ``ServerConfiguration/allowedSourceAddresses``. One refused address refuses the host: a name that mixes public and
/// private addresses is how rebinding attacks start.
struct SourceAddressPolicy: AddressResolving {
    let allowedHosts: [HostPattern]
    let allowsPrivateNetworks: Bool
    let allowedAddresses: [SourceAddress]
    let resolver: any HostResolving

    init(configuration: ServerConfiguration) {
        allowedHosts = configuration.allowedHosts
        allowsPrivateNetworks = configuration.allowsPrivateNetworks
        allowedAddresses = configuration.allowedSourceAddresses
        resolver = configuration.hostResolver
    }

    /// The categories ``ServerConfiguration/allowsPrivateNetworks`` opens.
    private static let privateCategories: Set<AddressCategory> = [
        .loopback, .privateNetwork, .linkLocal, .sharedAddressSpace,
    ]

    /// Whether `host` may be asked for at all (before any resolution).
    func allowsHost(_ host: String) -> Bool {
        allowedHosts.isEmpty || allowedHosts.contains { $0.matches(host) }
    }

    func address(forHost host: String, port: Int) async throws(DownloadError) -> String {
        guard allowsHost(host) else {
            throw .addressRefused(host: host, reason: "the host is not allowed")
        }
        let addresses: [IPAddress]
        if let literal = IPAddress(host) {
            addresses = [literal]
        } else {
            addresses = try await resolver.addresses(of: host)
        }
        guard let first = addresses.first else {
            throw .cannotConnect(reason: "the source's host does not resolve")
        }
        for address in addresses {
            let category = AddressCategory(address)
            if category == .publicInternet { continue }
            if allowsPrivateNetworks, Self.privateCategories.contains(category) { continue }
            if allowedAddresses.contains(where: { $0.matches(address, port: port) }) { continue }
            throw .addressRefused(host: host, reason: "\(category.rawValue) address")
        }
        // A literal goes through as it was written, so the downloader needs no pinned connection for it.
        return IPAddress(host) != nil ? host : first.description
    }
}
