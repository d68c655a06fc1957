import Foundation

/// A port of 127.0.0.1 that refuses connections: a socket bound to it that does not listen. Unlike
/// the port of a server that was started and stopped, it cannot be taken by another test's server
/// while this is alive.
public final class ClosedPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws { (fd, port) = try loopbackSocket() }

    public var url: String { "http://127.0.0.1:\(port)" }

    deinit { close(fd) }
}

/// A TCP listener on 127.0.0.1 that accepts connections and closes them at once: a peer that drops the
/// connection mid-request.
public final class ClosingServer: @unchecked Sendable {
    public let port: Int
    private let fd: Int32
    private let thread: Thread

    public init() throws {
        let (fd, port) = try loopbackSocket()
        guard listen(fd, 16) == 0 else {
            close(fd)
            throw SinkError(message: "listen failed")
        }
        self.port = port
        self.fd = fd
        thread = Thread {
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 1024)
                _ = read(c, &buffer, buffer.count)
                close(c)
            }
        }
        thread.start()
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

/// A TCP socket bound to a free port of 127.0.0.1, not yet listening: the descriptor and the port.
func loopbackSocket() throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SinkError(message: "socket() failed") }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    guard bound == 0, named == 0 else {
        close(fd)
        throw SinkError(message: "bind to 127.0.0.1 failed")
    }
    return (fd, Int(UInt16(bigEndian: addr.sin_port)))
}
