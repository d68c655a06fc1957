import AsyncHTTPClient
import KlaxonCore
import NIOCore
import NIOPosix

// The network's errors in words (`ErrorWords.describe`), instead of their debug descriptions
// (`connect(descriptor:addr:size:): Connection refused (errno: 111)`).

extension NIOCore.IOError: KlaxonCore.WordedError {
    /// `connection refused`: the system's words for the errno, without the system call's name.
    public var words: String { ErrorWords.errno(errnoCode) }
}

extension NIOCore.SocketAddressError: KlaxonCore.WordedError {
    public var words: String {
        switch self {
        case .unknown(let host, let port): "cannot resolve \(host):\(port)"
        case .unsupported: "unsupported address family"
        case .unixDomainSocketPathTooLong: "the UNIX socket's path is too long"
        case .failedToParseIPString(let text): "\"\(text)\" is not an IP address"
        }
    }
}

extension NIOCore.ChannelError: KlaxonCore.WordedError {
    public var words: String {
        switch self {
        case .connectTimeout(let t): "connection timed out after \(t.nanoseconds / 1_000_000) ms"
        case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed, .eof: "connection closed"
        case .writeHostUnreachable: "host unreachable"
        default: "\(self)"
        }
    }
}

extension NIOPosix.NIOConnectionError: KlaxonCore.WordedError {
    /// `cannot connect to example.org:443: connection refused`.
    public var words: String {
        let head = "cannot connect to \(host):\(port)"
        if let failure = connectionErrors.first { return "\(head): \(ErrorWords.describe(failure.error))" }
        if let dns = dnsAError ?? dnsAAAAError { return "\(head): cannot resolve: \(ErrorWords.describe(dns))" }
        return head
    }
}

extension AsyncHTTPClient.HTTPClientError: KlaxonCore.WordedError {
    public var words: String {
        switch self {
        case .connectTimeout: "connection timed out"
        case .readTimeout: "no answer in time (read timeout)"
        case .writeTimeout: "the request could not be sent in time (write timeout)"
        case .deadlineExceeded: "no answer before the deadline"
        case .remoteConnectionClosed: "the server closed the connection"
        case .invalidURL: "invalid URL"
        case .emptyHost: "the URL has no host"
        case .emptyScheme: "the URL has no scheme"
        case .tlsHandshakeTimeout: "TLS handshake timed out"
        case .redirectLimitReached: "too many redirects"
        case .redirectCycleDetected: "redirect loop"
        case .cancelled: "cancelled"
        case .getConnectionFromPoolTimeout: "no connection available in time"
        default: "HTTP client error: \(self)"
        }
    }
}
