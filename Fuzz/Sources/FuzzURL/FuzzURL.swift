import Foundation
import FuzzSupport
import NIOCore
import Osprey

/// The harness's main (SwiftPM links `main` to `FuzzURL_main`): libFuzzer feeds strings to the URL validation every
/// request and redirect target passes before it reaches the HTTP client. A URL it accepts must have what the client
/// needs without trapping: an http or https scheme, a host name or IP address, a port in 1–65535. For an IP literal,
/// the socket address the client would make is made here, so that a port the client cannot take traps here first.
@_cdecl("FuzzURL_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, count in
        let text = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        checkURL(text)
        // The same text as a redirect's Location, relative to an origin.
        if let base = URL(string: "http://origin.example:8080/a/b.jpg"),
            let relative = URL(string: text, relativeTo: base)?.absoluteURL
        {
            checkURL(relative.absoluteString)
        }
        return 0
    }
}

private func checkURL(_ text: String) {
    guard let request = try? ImageRequest(string: text) else { return }
    let url = request.url
    let scheme = url.scheme?.lowercased()
    precondition(scheme == "http" || scheme == "https", "accepted scheme \(String(describing: scheme))")
    guard let host = url.host(percentEncoded: false), !host.isEmpty else { preconditionFailure("accepted no host") }
    precondition(
        !host.unicodeScalars.contains { $0.value < 0x21 || $0.value >= 0x7F || "/\\?#@%".unicodeScalars.contains($0) },
        "accepted host \(host.debugDescription)")
    let port = url.port ?? (scheme == "https" ? 443 : 80)
    precondition((1...65535).contains(port), "accepted port \(port)")
    // For an IP literal, the socket address the client makes; a name is resolved later, to the same port.
    _ = try? SocketAddress(ipAddress: host, port: port)
}
