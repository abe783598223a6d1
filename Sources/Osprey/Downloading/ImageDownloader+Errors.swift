import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

extension ImageDownloader {
    /// Sorts what the HTTP stack threw into a ``DownloadError``, whose kind says whether it is transient.
    ///
    /// Anything unrecognised counts as a lost connection: transient, so an unexpected failure never puts a URL on the
    /// failed-URL list.
    static func classify(_ error: any Error) -> DownloadError {
        switch error {
        case let error as DownloadError:
            return error
        case is CancellationError:
            return .cancelled
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty {
                return .cannotConnect(reason: "cannot resolve \(error.host)")
            }
            let reasons = error.connectionErrors.map { "\($0.target): \($0.error)" }
            return .cannotConnect(
                reason: reasons.isEmpty ? "cannot reach \(error.host)" : reasons.joined(separator: "; "))
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL:
                return .cannotConnect(reason: error.description)
            case ETIMEDOUT:
                return .timedOut
            default:
                return .connectionLost(reason: error.description)
            }
        case let error as ChannelError:
            if case .connectTimeout = error { return .timedOut }
            return .connectionLost(reason: "\(error)")
        case let error as NIOSSLError:
            return .cannotConnect(reason: "TLS: \(error)")
        case let error as BoringSSLError:
            return .cannotConnect(reason: "TLS: \(error)")
        case let error as HTTPParserError:
            return .connectionLost(reason: "the origin broke the HTTP protocol: \(error)")
        default:
            return .connectionLost(reason: String(describing: error))
        }
    }
}
