import Foundation

/// A real SMTP server for email tests: aiosmtpd under Debian's `/usr/bin/python3`, on 127.0.0.1.
/// Plain, STARTTLS (with a certificate the test makes), AUTH, and scripted replies to DATA (451, 550…).
/// Each received message is parsed by Python's `email` package and written out as JSON, so tests
/// assert on what a real mail parser sees. Stop it before the test returns: `SMTPServer.with` or
/// `TestServers`.
public final class SMTPServer: TestServer, @unchecked Sendable {
    public struct Options: Sendable {
        public var tlsCert: String?
        public var tlsKey: String?
        public var requireStartTLS = false
        public var auth: (user: String, password: String)?
        /// Replies to the first DATA commands, in order (`451 4.3.0 try later`), then 250.
        public var replies: [String] = []

        public init() {}
    }

    public struct Message: Sendable {
        public var mailFrom: String
        public var rcptTos: [String]
        /// Decoded header values (RFC 2047 words decoded), in order.
        public var headers: [(String, String)]
        /// Header values as sent.
        public var rawHeaders: [(String, String)]
        public var contentType: String
        /// Non-multipart parts: content type and decoded text.
        public var parts: [(contentType: String, text: String)]
        public var tls: Bool
        public var authenticated: Bool

        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    public static let python = "/usr/bin/python3"
    public let port: Int
    let process: Process
    let dir: URL
    private let exit: ProcessExit

    public var url: String { "smtp://127.0.0.1:\(port)" }

    /// Starts a server without blocking a thread of Swift's cooperative pool: starting Python and
    /// waiting for its port takes a second or more on a loaded machine, and on 2 cores two blocked
    /// pool threads would stall every in-process server of the concurrently running tests.
    public static func start(_ options: Options = Options()) async throws -> SMTPServer {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try SMTPServer(options) }) }
        }
    }

    /// Starts a server, runs `body` with it and stops it before returning, also when `body` throws.
    public static func with<T>(
        _ options: Options = Options(), isolation: isolated (any Actor)? = #isolation,
        _ body: (SMTPServer) async throws -> T
    ) async throws -> T {
        try await serving(try await start(options), body)
    }

    public init(_ options: Options = Options()) throws {
        let check = Process()
        check.executableURL = URL(fileURLWithPath: Self.python)
        check.arguments = ["-c", "import aiosmtpd"]
        check.standardError = FileHandle.nullDevice
        try? launchProcess(check)
        check.waitUntilExit()
        guard check.terminationStatus == 0 else {
            throw SinkError(message: "python3-aiosmtpd is not installed for \(Self.python): run Deploy/setup.sh")
        }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("out"), withIntermediateDirectories: true)
        let script = dir.appendingPathComponent("smtp_server.py")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        let portFile = dir.appendingPathComponent("port")
        var args = [script.path, "--port-file", portFile.path, "--out", dir.appendingPathComponent("out").path]
        if let c = options.tlsCert, let k = options.tlsKey { args += ["--tls-cert", c, "--tls-key", k] }
        if options.requireStartTLS { args.append("--require-starttls") }
        if let a = options.auth { args += ["--auth", "\(a.user):\(a.password)"] }
        for r in options.replies { args += ["--reply", r] }
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = args
        exit = ProcessExit(process)
        process.standardOutput = FileHandle.nullDevice
        let log = dir.appendingPathComponent("server.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try launchProcess(process)
        let deadline = Date().addingTimeInterval(15)
        var found = 0
        while Date() < deadline {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
                let p = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                found = p
                break
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        guard found > 0 else {
            process.terminate()
            let err = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw SinkError(message: "the SMTP test server did not start: \(err)")
        }
        port = found
    }

    /// The messages received so far, in order.
    public func messages() -> [Message] {
        let out = dir.appendingPathComponent("out")
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).filter {
            $0.hasSuffix(".json")
        }.sorted()
        return files.compactMap { name in
            guard let data = try? Data(contentsOf: out.appendingPathComponent(name)),
                let o = try? JSONDecoder().decode(Received.self, from: data)
            else { return nil }
            func pairs(_ list: [[String]]?) -> [(String, String)] {
                (list ?? []).compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
            }
            return Message(
                mailFrom: o.mailFrom ?? "", rcptTos: o.rcptTos ?? [], headers: pairs(o.headers),
                rawHeaders: pairs(o.rawHeaders), contentType: o.contentType ?? "",
                parts: (o.parts ?? []).map { ($0["content_type"] ?? "", $0["text"] ?? "") },
                tls: o.tls ?? false, authenticated: o.auth ?? false)
        }
    }

    /// A message as the server's script writes it (`out/NNN.json`).
    private struct Received: Decodable {
        var mailFrom: String?
        var rcptTos: [String]?
        var headers: [[String]]?
        var rawHeaders: [[String]]?
        var contentType: String?
        var parts: [[String: String]]?
        var tls: Bool?
        var auth: Bool?

        enum CodingKeys: String, CodingKey {
            case headers, parts, tls, auth
            case mailFrom = "mail_from"
            case rcptTos = "rcpt_tos"
            case rawHeaders = "raw_headers"
            case contentType = "content_type"
        }
    }

    /// Stops the server with SIGKILL (children of the test runner inherit a blocked signal mask, so
    /// SIGTERM may never arrive), which closes every connection, and awaits the exit without blocking
    /// a thread. True if the process ended within `TestServers.stopLimit`.
    @discardableResult
    public func stop() async -> Bool {
        if !exit.hasExited { kill(process.processIdentifier, SIGKILL) }
        let stopped = await exit.wait(within: TestServers.stopLimit)
        try? FileManager.default.removeItem(at: dir)
        return stopped
    }

    /// A server its test never stopped: killed without a wait.
    deinit {
        if !exit.hasExited { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: dir)
    }

    /// Makes a self-signed certificate for 127.0.0.1 with openssl; returns (cert, key) paths.
    public static func selfSignedCertificate(in dir: URL) throws -> (cert: String, key: String) {
        let cert = dir.appendingPathComponent("cert.pem").path
        let key = dir.appendingPathComponent("key.pem").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj",
            "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try launchProcess(p)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw SinkError(message: "openssl could not make a test certificate") }
        return (cert, key)
    }

    static let script = #"""
        import argparse, email, json, os, signal, socket, ssl, sys, time
        from email import policy
        # The parent may have blocked these; a test server must stop when asked.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult, LoginPassword

        ap = argparse.ArgumentParser()
        ap.add_argument("--port-file", required=True)
        ap.add_argument("--out", required=True)
        ap.add_argument("--tls-cert")
        ap.add_argument("--tls-key")
        ap.add_argument("--require-starttls", action="store_true")
        ap.add_argument("--auth")
        ap.add_argument("--reply", action="append", default=[])
        args = ap.parse_args()

        class Handler:
            def __init__(self):
                self.n = 0
                self.replies = list(args.reply)

            async def handle_DATA(self, server, session, envelope):
                if self.replies:
                    return self.replies.pop(0)
                self.n += 1
                msg = email.message_from_bytes(envelope.original_content or envelope.content, policy=policy.default)
                parts = []
                for part in msg.walk():
                    if part.get_content_maintype() == "multipart":
                        continue
                    content = part.get_content()
                    # A binary part (an inline chart) is kept as its size, in words.
                    if isinstance(content, bytes):
                        content = "(%d bytes)" % len(content)
                    parts.append({"content_type": part.get_content_type(), "text": content})
                record = {
                    "mail_from": envelope.mail_from,
                    "rcpt_tos": envelope.rcpt_tos,
                    "headers": [[k, str(v)] for k, v in msg.items()],
                    "raw_headers": [[k, v] for k, v in msg.raw_items()],
                    "content_type": msg.get_content_type(),
                    "parts": parts,
                    "tls": session.ssl is not None,
                    "auth": bool(session.authenticated),
                }
                path = os.path.join(args.out, "%04d.json" % self.n)
                with open(path + ".tmp", "w") as f:
                    json.dump(record, f)
                os.rename(path + ".tmp", path)
                return "250 OK"

        def authenticator(server, session, envelope, mechanism, auth_data):
            user, password = args.auth.split(":", 1)
            if isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user and auth_data.password.decode() == password:
                return AuthResult(success=True)
            return AuthResult(success=False, handled=False)

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        kwargs = {}
        if args.tls_cert:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(args.tls_cert, args.tls_key)
            kwargs["tls_context"] = ctx
            kwargs["require_starttls"] = args.require_starttls
        if args.auth:
            kwargs["authenticator"] = authenticator
            kwargs["auth_required"] = True
            kwargs["auth_require_tls"] = False
        controller = Controller(Handler(), hostname="127.0.0.1", port=port, **kwargs)
        controller.start()
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.rename(args.port_file + ".tmp", args.port_file)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        """#
}
