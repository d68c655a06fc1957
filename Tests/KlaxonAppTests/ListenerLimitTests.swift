import Foundation
import KlaxonCore
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import Testing

@testable import KlaxonApp

/// Issue 27, items 2 and 9: a listener that runs out of file descriptors trapped the daemon, slow or
/// idle connections were never closed, and SIGHUP ended it.
@Suite("listener limits: connections, slow and idle clients, open files, SIGHUP", .serialized, .timeLimit(.minutes(10)))
struct ListenerLimitTests {
    /// Short limits for the in-process server: the deadlines are what is tested.
    static let quick = ConnectionLimits(
        maxConnections: 2048, reserve: 0, headTimeout: .seconds(1), bodyTimeout: .seconds(2),
        idleTimeout: .seconds(2))

    @Test("klaxon run under a soft limit of 256: 400 idle connections neither trap it nor keep /healthz out")
    func moreConnectionsThanTheSoftLimit() async throws {
        // The test process holds 400 sockets itself.
        FileLimits.raise(logger: quietLogger)
        let s = try Scratch()
        let cfg = try s.write("klaxon.yaml", "database: k.sqlite\nrules: []\nlisten: 127.0.0.1:0\n")
        let daemon = try await startLimitedDaemon(config: cfg, in: s.dir, limits: "ulimit -n 256")
        let outcome = await Result {
            let pid = daemon.process.processIdentifier
            #expect(openFilesLimit(pid: pid) == "256 256", "\(daemon.logText)")
            let crowd = (0..<400).compactMap { _ in try? RawSocket(port: daemon.port) }
            defer { crowd.forEach { $0.close() } }
            #expect(crowd.count == 400)
            // /healthz answers while the crowd is there: the oldest silent connections make room.
            try await poll(until: "/healthz answers beside 400 idle connections: \(daemon.logText)") {
                guard daemon.process.isRunning else { throw SinkError(message: "daemon died: \(daemon.logText)") }
                return await rawGet(port: daemon.port, "/healthz")?.status == 200
            }
            #expect(openFiles(pid: pid) < 256)
            // And every silent connection is closed by the head timeout (10 s by default).
            try await poll(until: "the daemon closes every silent connection") {
                #expect(openFiles(pid: pid) < 256)
                return crowd.allSatisfy { $0.closedByPeer }
            }
            #expect(daemon.process.isRunning)
            #expect(await rawGet(port: daemon.port, "/healthz")?.status == 200)
            #expect(await daemon.stop() == 0, "\(daemon.logText)")
            #expect(daemon.logText.contains("klaxon stopped"))
            #expect(daemon.logText.contains("HTTP connection limit reached"), "\(daemon.logText)")
        }
        await daemon.killIfRunning()
        try outcome.get()
    }

    @Test("a request head that never completes is closed within the head timeout, in every hostile shape")
    func slowHeads() async throws {
        try await withServer(Self.quick) { port in
            // Each sends a little, slowly (a piece every 100 ms), and never a complete head in time.
            let line = "GET /healthz HTTP/1.1\r\n"
            let shapes: [(String, [String])] = [
                ("nothing at all", []),
                ("a request line, a byte at a time", line.map(String.init)),
                ("header lines, one after another", [line] + Array(repeating: "X-Slow: yes\r\n", count: 40)),
                ("a header value, a byte at a time", [line, "X-Slow: "] + Array(repeating: "a", count: 40)),
                ("a request line that never ends", ["GET /"] + Array(repeating: "a", count: 10)),
                ("blank lines before a request", Array(repeating: "\r\n", count: 40)),
            ]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (name, pieces) in shapes {
                    group.addTask {
                        // Before the connect: the server's clock starts after it.
                        let since = ContinuousClock.now
                        let conn = try RawSocket(port: port)
                        defer { conn.close() }
                        // Blank lines may be refused at once as garbage; the rest wait out the timeout.
                        try await expectClosed(
                            conn, name: name, after: name.hasPrefix("blank") ? .zero : .seconds(1), since: since,
                            trickling: pieces)
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("a body trickled after its head is closed within the body timeout; a prompt client is served")
    func slowBodyAndPromptClient() async throws {
        try await withServer(Self.quick, apiToken: "t") { port in
            let head =
                "POST /api/v1/readings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Length: 1000\r\n\r\n"
            let conn = try RawSocket(port: port)
            defer { conn.close() }
            try await expectClosed(
                conn, name: "trickled body", after: .seconds(2),
                trickling: [head] + Array(repeating: "station,", count: 100))
        }
        // A client that sends its request in pieces, within the limits, gets its answer. Limits far
        // beyond the test's run: a loaded machine may take seconds between the pieces.
        let patient = ConnectionLimits(
            maxConnections: 2048, reserve: 0, headTimeout: .seconds(600), bodyTimeout: .seconds(600),
            idleTimeout: .seconds(600))
        try await withServer(patient) { port in
            let prompt = try RawSocket(port: port)
            defer { prompt.close() }
            for piece in ["GET /hea", "lthz HTTP/1.1\r\n", "Host: x\r\n", "Connection: close\r\n\r\n"] {
                prompt.send(piece)
                try await Task.sleep(for: .milliseconds(50))
            }
            let answer = try await prompt.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        }
    }

    @Test("an idle keep-alive connection is closed after the idle timeout; the next request's head is timed")
    func idleKeepAlive() async throws {
        try await withServer(Self.quick) { port in
            // Idle after one request.
            let idle = try RawSocket(port: port)
            defer { idle.close() }
            // Before the request: the idle clock starts after its answer.
            let sent = ContinuousClock.now
            idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            try await poll(until: "the first response") { idle.received.contains("ok\n") }
            try await poll(until: "the idle connection is closed") { idle.closedByPeer }
            #expect(ContinuousClock.now - sent >= .milliseconds(1980), "closed before the idle timeout")
            // Two requests on one connection, then the head of a third trickled: cut by the head timeout.
            let slow = try RawSocket(port: port)
            defer { slow.close() }
            slow.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            try await poll(until: "two responses") { slow.received.components(separatedBy: "ok\n").count == 3 }
            try await expectClosed(
                slow, name: "keep-alive trickle", after: .seconds(1),
                trickling: "GET /healthz HTTP/1.1\r\n".map(String.init),
                answered: 2)
        }
    }

    @Test("once the server has closed its side, a client that never closes its own is closed after the idle timeout")
    func clientsThatNeverClose() async throws {
        // Only the idle timeout is short: a loaded machine that reads the request late must not
        // meet the head timeout first (that one is `idleAndHeadTimeouts`'s).
        let limits = ConnectionLimits(
            maxConnections: 2048, reserve: 0, headTimeout: .seconds(60), bodyTimeout: .seconds(60),
            idleTimeout: .seconds(2))
        try await withServer(limits) { port in
            // Hummingbird answers and half-closes, then waits for the client's close for as long as it takes.
            // (An HTTP/1.0 request's connection is closed at once; it is here to show it still is.)
            let shapes: [(String, String, lingers: Bool)] = [
                ("garbage", "\u{1}\u{2}garbage\r\n\r\n", true),
                ("a header line with no colon", "GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n", true),
                ("Connection: close", "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", true),
                ("an HTTP/1.0 request", "GET /healthz HTTP/1.0\r\n\r\n", false),
            ]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (name, request, lingers) in shapes {
                    group.addTask {
                        let conn = try RawSocket(port: port)
                        defer { conn.close() }
                        let sent = ContinuousClock.now
                        conn.send(request)
                        try await poll(until: "\(name): the server closes its side") { conn.closedByPeer }
                        #expect(conn.received.hasPrefix("HTTP/1."), "\(name): \(conn.received)")
                        try await poll(until: "\(name): the server closes the connection", every: .milliseconds(50)) {
                            conn.resetOnSend
                        }
                        if lingers {
                            #expect(
                                ContinuousClock.now - sent >= .milliseconds(1980), "\(name): closed too early")
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("at the cap, the longest-silent connection makes room; with every slot busy, a newcomer is closed")
    func capAndShedding() async throws {
        // Every timeout far beyond the test's run, so what happens here is the cap's doing alone,
        // however slowly a loaded machine runs it (the body timeout is `slowBodyAndPromptClient`'s).
        var limits = ConnectionLimits(
            maxConnections: 20, reserve: 0, headTimeout: .seconds(600), bodyTimeout: .seconds(600),
            idleTimeout: .seconds(600))
        #expect(limits.effectiveMaximum(softLimit: 1_000_000) == 20)
        #expect(limits.effectiveMaximum(softLimit: 30) == 20)
        limits.reserve = 100
        #expect(limits.effectiveMaximum(softLimit: 110) == ConnectionLimits.minimumConnections)
        #expect(limits.effectiveMaximum(softLimit: 1_000) == 20)
        limits.reserve = 0
        try await withServer(limits, apiToken: "t") { port in
            // 60 silent connections: 40 of them are shed, oldest first, and /healthz still answers.
            let silent = try (0..<60).map { _ in try RawSocket(port: port) }
            defer { silent.forEach { $0.close() } }
            try await poll(until: "the oldest silent connections are shed") {
                silent.filter(\.closedByPeer).count >= 40
            }
            // /healthz takes the place of one more; the other 19 stay (none is shed for nothing).
            #expect(await rawGet(port: port, "/healthz")?.status == 200)
            try await poll(until: "19 silent connections stay") { silent.filter { !$0.closedByPeer }.count == 19 }
            // 20 requests in progress (bodies still coming) fill every slot: none is shed for a newcomer.
            // Each connection first asks for /healthz, in the same write: the server parses the POST's
            // head before /healthz's answer goes out, so once every answer is in, every slot is busy in
            // the server's eyes (a head still unread leaves its connection waiting, and so shed-able).
            let head =
                "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /api/v1/readings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Length: 100\r\n\r\n"
                + "station,"
            var busy: [RawSocket] = []
            defer { busy.forEach { $0.close() } }
            for _ in 0..<20 {
                let conn = try RawSocket(port: port)
                conn.send(head)
                busy.append(conn)
            }
            try await poll(until: "every silent connection makes way for the requests") {
                silent.allSatisfy(\.closedByPeer)
            }
            try await poll(until: "every busy connection's /healthz is answered") {
                busy.allSatisfy { $0.received.contains("ok\n") }
            }
            let newcomer = try RawSocket(port: port)
            defer { newcomer.close() }
            newcomer.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            try await poll(until: "the newcomer is closed") { newcomer.closedByPeer }
            #expect(!newcomer.received.contains("200"))
            #expect(busy.allSatisfy { !$0.closedByPeer }, "a request in progress is never shed")
            // The clients that held the slots go: the slots are free, and /healthz answers again.
            busy.forEach { $0.close() }
            try await poll(until: "/healthz answers once the busy clients have gone") {
                await rawGet(port: port, "/healthz")?.status == 200
            }
        }
    }

    @Test(
        "issue 38: unsigned, stale or oversized Slack presses are refused from their head alone, before any body byte; bodies buffered at once stay within the server's budget"
    )
    func bodiesAreCheckedBeforeTheyAreRead() async throws {
        let mib = 1 << 20
        // Deadlines far beyond the test: what is tested is that nothing waits for a body.
        let limits = ConnectionLimits(
            maxConnections: 2048, reserve: 0, headTimeout: .seconds(600), bodyTimeout: .seconds(600),
            idleTimeout: .seconds(600), maxBufferedBodyBytes: 4 * mib)
        try await withServer(limits, chat: .init(slackSigningSecret: "shh")) { port in
            func head(_ headers: String, length: Int = mib) -> String {
                "POST /chat/slack/actions HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    + "Content-Length: \(length)\r\n\(headers)\r\n"
            }
            let now = Int64(Date().timeIntervalSince1970)
            let forged = "X-Slack-Signature: v0=" + String(repeating: "0", count: 64) + "\r\n"
            let fresh = "X-Slack-Request-Timestamp: \(now)\r\n"
            // Each shape 50 times at once; each sends its head and never a byte of its 1 MiB body.
            let shapes: [(name: String, head: String, status: String)] = [
                ("no signature headers", head(""), "401"),
                ("a timestamp, no signature", head(fresh), "401"),
                ("a stale timestamp", head("X-Slack-Request-Timestamp: \(now - 3600)\r\n" + forged), "401"),
                ("a timestamp that is not one", head("X-Slack-Request-Timestamp: 1e9\r\n" + forged), "401"),
                ("a body over the route's 1 MiB", head(fresh + forged, length: 2 * mib), "413"),
            ]
            var crowd: [(name: String, status: String, conn: RawSocket)] = []
            defer { crowd.forEach { $0.conn.close() } }
            for shape in shapes {
                for _ in 0..<50 {
                    let conn = try RawSocket(port: port)
                    conn.send(shape.head)
                    crowd.append((shape.name, shape.status, conn))
                }
            }
            try await poll(until: "every head answered without its body") {
                crowd.allSatisfy { !$0.conn.received.isEmpty }
            }
            for c in crowd {
                #expect(c.conn.received.hasPrefix("HTTP/1.1 \(c.status)"), "\(c.name): \(c.conn.received.prefix(80))")
            }

            // Fresh and (falsely) signed: their bodies must be read to check them. Within the 4 MiB
            // budget, four are read; the rest are refused (503) at once, unread.
            var held: [RawSocket] = []
            defer { held.forEach { $0.close() } }
            for _ in 0..<20 {
                let conn = try RawSocket(port: port)
                conn.send(head(fresh + forged) + "payload=")
                held.append(conn)
            }
            try await poll(until: "sixteen refused for the budget") {
                held.filter { $0.received.hasPrefix("HTTP/1.1 503") }.count >= 16
            }
            #expect(held.filter { $0.received.hasPrefix("HTTP/1.1 503") }.count == 16)
            #expect(held.filter { $0.received.isEmpty }.count == 4, "four bodies being read")
            // The budget is the server's, not a connection's: a small signed press waits its turn.
            #expect(await rawSlackPress(port: port)?.status == 503)
            #expect(await rawGet(port: port, "/healthz")?.status == 200)
            // The four give up; their share comes back, and a signed press is read and answered.
            for conn in held where conn.received.isEmpty { conn.close() }
            try await poll(until: "a signed press is read once the budget is free") {
                await rawSlackPress(port: port)?.status == 400
            }
        }
    }

    @Test("klaxon run: SIGHUP twice reloads and ends nothing; SIGTERM still stops it with 0")
    func sighup() async throws {
        let s = try Scratch()
        let cfg = try s.write("klaxon.yaml", "database: k.sqlite\nrules: []\nlisten: 127.0.0.1:0\n")
        // A soft limit below the hard one: the daemon raises it.
        let daemon = try await startLimitedDaemon(config: cfg, in: s.dir, limits: "ulimit -Sn 256")
        let outcome = await Result {
            let pid = daemon.process.processIdentifier
            let limits = openFilesLimit(pid: pid)?.split(separator: " ").map(String.init) ?? []
            #expect(limits.count == 2 && limits[0] == limits[1] && limits[0] != "256", "\(limits)")
            #expect(daemon.logText.contains("open-files limit"))
            // SIGPIPE is ignored (a closed pipe is an error to report, not a death).
            #expect(ignoresSignal(pid: pid, SIGPIPE))
            // SIGHUP reloads the config and rules (here: the same again) and ends nothing.
            let line = "configuration reloaded"
            for n in 1...2 {
                kill(pid, SIGHUP)
                try await poll(until: "SIGHUP \(n) is logged: \(daemon.logText)") {
                    daemon.logText.components(separatedBy: line).count - 1 >= n
                }
                #expect(daemon.process.isRunning)
                #expect(await rawGet(port: daemon.port, "/healthz")?.status == 200)
            }
            #expect(!daemon.logText.contains("klaxon stopping"))
            #expect(await daemon.stop() == 0, "\(daemon.logText)")
            #expect(daemon.process.terminationReason == .exit)
            #expect(daemon.logText.contains("reason=SIGTERM") || daemon.logText.contains("SIGTERM"))
            #expect(daemon.logText.contains("klaxon stopped"))
        }
        await daemon.killIfRunning()
        try outcome.get()
    }

    @Test("the systemd units give the daemon room: LimitNOFILE well above the usual 1,024")
    func unitsRaiseTheLimit() throws {
        for unit in ["Deploy/klaxon.service", "Deploy/ha/klaxon-ha.service"] {
            let text = try String(contentsOf: packageRoot.appendingPathComponent(unit), encoding: .utf8)
            let line = text.split(separator: "\n").first { $0.hasPrefix("LimitNOFILE=") }
            let value = line.flatMap { Int($0.dropFirst("LimitNOFILE=".count)) } ?? 0
            #expect(value >= 65536, "\(unit): \(line ?? "no LimitNOFILE")")
        }
    }

    // MARK: helpers

    /// Runs the daemon's HTTP application in-process with `limits`.
    func withServer(
        _ limits: ConnectionLimits, apiToken: String? = nil, chat: ChatEndpoints.Settings = .init(),
        _ body: (Int) async throws -> Void
    ) async throws {
        let s = try Scratch()
        let store = try SQLiteStore.open(path: s.path("server.db"))
        let (port, task) = await startHTTP(
            store: store, settings: .init(port: 0, apiToken: apiToken, connections: limits), chat: chat)
        try #require(port > 0)
        let outcome = await Result { try await body(port) }
        task.cancel()
        _ = await task.result
        try outcome.get()
    }

}

/// Sends `pieces` one every 100 ms (fewer than the timeout needs to complete a request) until the
/// server closes the connection; it must, within a generous bound, and not before `after` has
/// passed `since` (an instant before the server's clock for the deadline started).
private func expectClosed(
    _ conn: RawSocket, name: String, after: Duration, since: ContinuousClock.Instant = .now,
    trickling pieces: [String], answered: Int = 0
) async throws {
    var rest = pieces[...]
    try await poll(until: "\(name): closed by the server", every: .milliseconds(100)) {
        if conn.closedByPeer { return true }
        if let piece = rest.popFirst() { conn.send(piece) }
        return false
    }
    // A few milliseconds of slack: the event loop's timer and this clock are read apart.
    if after > .zero {
        #expect(ContinuousClock.now - since >= after - .milliseconds(20), "\(name): closed too early")
    }
    #expect(conn.received.components(separatedBy: "HTTP/1.1 200").count - 1 == answered, "\(name): \(conn.received)")
}

/// Starts `klaxon run --config config` under `limits` (a shell `ulimit` command); `exec` keeps the
/// daemon's pid.
private func startLimitedDaemon(config: String, in dir: URL, limits: String) async throws -> DaemonProcess {
    try await DaemonProcess.start(
        config: config, in: dir, prefix: ["/bin/sh", "-c", "\(limits) && exec \"$0\" \"$@\""])
}

/// `/proc/PID/limits`' "Max open files" as "SOFT HARD".
private func openFilesLimit(pid: Int32) -> String? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8) else { return nil }
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") }) else { return nil }
    let fields = line.dropFirst("Max open files".count).split(separator: " ")
    return fields.count >= 2 ? "\(fields[0]) \(fields[1])" : nil
}

/// How many descriptors `pid` has open.
private func openFiles(pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
}

/// Whether `pid` ignores `signo` (its SigIgn mask in /proc/PID/status).
private func ignoresSignal(pid: Int32, _ signo: Int32) -> Bool {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("SigIgn:") }),
        let mask = UInt64(line.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespaces), radix: 16)
    else { return false }
    return mask & (1 << UInt64(signo - 1)) != 0
}

/// A GET on a connection of its own (`Connection: close`), off the cooperative pool; nil if the
/// server did not answer within 10 s or closed the connection first.
private func rawGet(port: Int, _ path: String) async -> (status: Int, body: String)? {
    try? await offPool {
        guard let conn = try? RawSocket(port: port, blocking: true) else { return nil }
        defer { conn.close() }
        conn.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let text = conn.readBlocking(within: 10)
        guard text.hasPrefix("HTTP/1.1 "), let status = Int(text.dropFirst(9).prefix(3)) else { return nil }
        return (status, text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n"))
    }
}

/// A small Slack press signed with `shh` whose payload is not an interaction (400 once read), on a
/// connection of its own, off the cooperative pool; nil if the server did not answer within 10 s.
private func rawSlackPress(port: Int) async -> (status: Int, body: String)? {
    try? await offPool {
        guard let conn = try? RawSocket(port: port, blocking: true) else { return nil }
        defer { conn.close() }
        let body = "payload=%7B%7D"
        let ts = Int64(Date().timeIntervalSince1970)
        let signature = ChatEndpoints.slackSignature(secret: "shh", timestamp: ts, body: body)
        conn.send(
            "POST /chat/slack/actions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n"
                + "X-Slack-Request-Timestamp: \(ts)\r\nX-Slack-Signature: \(signature)\r\n\r\n\(body)")
        let text = conn.readBlocking(within: 10)
        guard text.hasPrefix("HTTP/1.1 "), let status = Int(text.dropFirst(9).prefix(3)) else { return nil }
        return (status, text)
    }
}

/// A plain TCP client socket to 127.0.0.1 (non-blocking unless asked): sends text, and tells
/// whether the server closed it.
private final class RawSocket: @unchecked Sendable {
    // @unchecked: `buffer` and `closed` are only touched under `lock`.
    let fd: Int32
    private let lock = NSLock()
    private var buffer = ""

    init(port: Int, blocking: Bool = false) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SinkError(message: "socket() failed: errno \(errno)") }
        if blocking {
            // A connect waiting on a full backlog gives up after 10 s.
            var limit = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        } else {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 || errno == EINPROGRESS else {
            Foundation.close(fd)
            throw SinkError(message: "connect to \(port) failed: errno \(errno)")
        }
        self.fd = fd
    }

    private var closed = false

    /// Closes the socket once; a second call does nothing (the number may be another socket's by then).
    func close() {
        let first = lock.withLock {
            defer { closed = true }
            return !closed
        }
        if first { Foundation.close(fd) }
    }

    /// Sends `text` (what does not fit the socket's buffer is dropped: these are a few bytes).
    func send(_ text: String) {
        _ = text.withCString { Foundation.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    /// What the server sent so far (read without waiting).
    var received: String {
        _ = drain()
        return lock.withLock { buffer }
    }

    /// Whether the server closed (or reset) the connection; reads what came before the end.
    var closedByPeer: Bool { drain() }

    /// Reads what is there without waiting; true at the end of the stream or on an error.
    private func drain() -> Bool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &bytes, bytes.count, Int32(MSG_DONTWAIT))
            if n > 0 {
                let text = String(decoding: bytes[0..<n], as: UTF8.self)
                lock.withLock { buffer += text }
                continue
            }
            if n == 0 { return true }
            return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ENOTCONN)
        }
    }

    /// Whether the connection is gone at the server too (not only half-closed): a byte sent to a
    /// closed socket is answered with a reset, and a later send fails.
    var resetOnSend: Bool {
        let n = "x".withCString { Foundation.send(fd, $0, 1, Int32(MSG_NOSIGNAL)) }
        return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR
    }

    /// Reads until the server closes, for a blocking socket, for `seconds` at most (then what came).
    func readBlocking(within seconds: Int) -> String {
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var out = [UInt8]()
        var bytes = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &bytes, bytes.count, 0)
            if n <= 0 { break }
            out += bytes[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Waits, off the pool, until the server closes; what it sent.
    func readUntilClosed() async throws -> String {
        try await poll(until: "the server answers and closes") { closedByPeer }
        return received
    }
}
