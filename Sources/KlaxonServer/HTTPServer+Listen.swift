import Foundation
import Hummingbird
import KlaxonCore
import NIOCore
import ServiceLifecycle

/// The daemon's Hummingbird application as a service that says where it could not listen: a bind
/// that fails (the port taken, an address not of this host, a port below 1024 without the right)
/// becomes a `ListenError` naming the address, instead of NIO's
/// `bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`.
public struct HTTPServer<App: ApplicationProtocol>: Service {
    let app: App
    let host: String
    let port: Int

    public func run() async throws {
        do {
            try await app.run()
        } catch let e as IOError where ListenError.bindErrnos.contains(e.errnoCode) {
            throw ListenError(host: host, port: port, reason: ErrorWords.errno(e.errnoCode))
        } catch let e as SocketAddressError {
            throw ListenError(host: host, port: port, reason: ErrorWords.describe(e))
        }
    }
}

/// `cannot listen on 127.0.0.1:9464: address already in use`.
public struct ListenError: WordedError, CustomStringConvertible, Sendable {
    public var host: String
    public var port: Int
    public var reason: String

    static let bindErrnos: Set<CInt> = [EADDRINUSE, EADDRNOTAVAIL, EACCES, EPERM]

    public var words: String { "cannot listen on \(host):\(port): \(reason)" }
    public var description: String { words }
}
