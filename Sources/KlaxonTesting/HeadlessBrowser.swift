import Foundation
import HummingbirdWSClient
import KlaxonCore
import Logging
import NIOCore
import Synchronization

/// A headless Chromium for tests, driven over the Chrome DevTools Protocol (CDP).
///
///     try await HeadlessBrowser.with { browser in
///         let page = try await browser.newPage(width: 390, height: 844, mobile: true)
///         let loaded = try await page.open("http://127.0.0.1:\(port)/trips")
///         #expect(loaded.status == 200)
///         let rows = try await page.evaluate("document.querySelectorAll('#trips tbody tr').length").int
///         try await page.screenshot(to: screenshots.appendingPathComponent("trips-phone.png"))
///     }
///
/// `launch` starts `chromium --headless --no-sandbox --remote-debugging-port=0` with a fresh
/// `--user-data-dir` in the temporary folder, reads the `DevTools listening on ws://…` line from its
/// standard error and opens that WebSocket. Each page is a target in a browser context of its own (its
/// own cookies), attached over the one connection (`flatten` sessions). Waits are event-driven: a
/// navigation ends at its `Page.loadEventFired`, whatever the page's speed; each wait has a bound
/// that only says "broken" (`limit`). `close` (which `with` always awaits) asks the browser to quit,
/// kills it if it does not, waits for its exit through a termination handler (no thread blocks), and
/// removes the user-data folder.
public final class HeadlessBrowser: Sendable {
    /// How long any one wait (a launch, a command's answer, a page load) may take before it is an error.
    public static let limit = Duration.seconds(30)

    let process: Process
    let exit: ProcessExit
    let stderr: StderrLines
    let connection: DevToolsConnection
    let profile: URL
    private let closed = Mutex(false)

    private init(process: Process, exit: ProcessExit, stderr: StderrLines, connection: DevToolsConnection, profile: URL)
    {
        self.process = process
        self.exit = exit
        self.stderr = stderr
        self.connection = connection
        self.profile = profile
    }

    /// The Chromium to use: `$KLAXON_CHROMIUM`, else the first of `chromium`, `chromium-browser`,
    /// `google-chrome` found on `PATH` (or in `/usr/bin`); nil when there is none.
    public static func executable() -> String? {
        let env = ProcessInfo.processInfo.environment
        if let given = env["KLAXON_CHROMIUM"], !given.isEmpty {
            return FileManager.default.isExecutableFile(atPath: given) ? given : nil
        }
        let dirs = (env["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin"]
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            for dir in dirs where !dir.isEmpty {
                let path = dir + "/" + name
                if FileManager.default.isExecutableFile(atPath: path) { return path }
            }
        }
        return nil
    }

    /// Starts a browser, runs `body` with it and closes it (awaited), also when `body` throws.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (HeadlessBrowser) async throws -> T
    ) async throws -> T {
        let browser = try await launch()
        let outcome = await Result { try await body(browser) }
        await browser.close()
        return try outcome.get()
    }

    /// Starts a headless Chromium and connects to it.
    public static func launch(executable: String? = nil) async throws -> HeadlessBrowser {
        guard let path = executable ?? Self.executable() else {
            throw BrowserError("no Chromium found (install Debian's chromium, or set KLAXON_CHROMIUM)")
        }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "klaxon-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = [
            "--headless", "--no-sandbox", "--remote-debugging-port=0", "--user-data-dir=\(profile.path)",
            "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-extensions", "--disable-background-networking", "--disable-sync", "--disable-breakpad",
            "--disable-crash-reporter", "--disable-component-update", "--mute-audio", "--hide-scrollbars",
            "--password-store=basic", "--use-mock-keychain",
            // The DevTools WebSocket takes connections from clients that send an Origin (as the
            // WebSocket client does); it listens on loopback, on a random port, for this test only.
            "--remote-allow-origins=*", "about:blank",
        ]
        // Chromium's caches and crash folders go into the profile, never the user's home.
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = profile.path
        environment["XDG_CONFIG_HOME"] = profile.appendingPathComponent("config").path
        environment["XDG_CACHE_HOME"] = profile.appendingPathComponent("cache").path
        p.environment = environment
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        let pipe = Pipe()
        p.standardError = pipe
        let stderr = StderrLines()
        let exit = ProcessExit(p)
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.readSomeRetrying()
            if data.isEmpty {
                handle.readabilityHandler = nil
                stderr.end()
            } else {
                stderr.feed(data)
            }
        }
        do {
            try await launchProcess(p)
        } catch {
            pipe.fileHandleForReading.readabilityHandler = nil
            try? FileManager.default.removeItem(at: profile)
            throw BrowserError("cannot start \(path): \(error)")
        }
        let url: String
        do {
            url = try await stderr.devToolsURL(within: limit)
        } catch {
            await Self.stop(p, exit: exit)
            pipe.fileHandleForReading.readabilityHandler = nil
            try? FileManager.default.removeItem(at: profile)
            throw error
        }
        let connection = DevToolsConnection.open(url: url)
        return HeadlessBrowser(process: p, exit: exit, stderr: stderr, connection: connection, profile: profile)
    }

    /// A new tab, in a browser context of its own (cookies and storage apart from every other page),
    /// with a viewport of `width`×`height` CSS pixels (`mobile`: as a phone, honouring the page's
    /// viewport meta tag).
    public func newPage(width: Int = 1280, height: Int = 900, mobile: Bool = false) async throws -> BrowserPage {
        let context = try await connection.send("Target.createBrowserContext", ["disposeOnDetach": true])
        guard let contextID = context["browserContextId"]?.string else {
            throw BrowserError("Target.createBrowserContext gave no browserContextId")
        }
        let target = try await connection.send(
            "Target.createTarget", ["url": "about:blank", "browserContextId": .string(contextID)])
        guard let targetID = target["targetId"]?.string else {
            throw BrowserError("Target.createTarget gave no targetId")
        }
        let attached = try await connection.send(
            "Target.attachToTarget", ["targetId": .string(targetID), "flatten": true])
        guard let session = attached["sessionId"]?.string else {
            throw BrowserError("Target.attachToTarget gave no sessionId")
        }
        let page = BrowserPage(
            connection: connection, session: session, target: targetID, context: contextID,
            events: connection.events(for: session))
        _ = try await page.send("Page.enable")
        _ = try await page.send("Network.enable")
        try await page.resize(width: width, height: height, mobile: mobile)
        return page
    }

    /// Closes the browser: `Browser.close`, then SIGTERM and SIGKILL if it lingers; its exit is
    /// awaited and its profile folder removed. Safe to call twice.
    public func close() async {
        let first = closed.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        _ = try? await connection.send("Browser.close", [:], within: .seconds(5))
        await Self.stop(process, exit: exit)
        await connection.shutdown()
        stderr.end()
        try? FileManager.default.removeItem(at: profile)
    }

    /// Waits for the process to exit (after a `Browser.close`), else terminates, else kills it.
    static func stop(_ p: Process, exit: ProcessExit) async {
        if await exit.wait(within: .seconds(10)) { return }
        if !exit.hasExited { kill(p.processIdentifier, SIGTERM) }
        if await exit.wait(within: .seconds(5)) { return }
        if !exit.hasExited { kill(p.processIdentifier, SIGKILL) }
        _ = await exit.wait(within: .seconds(30))
    }

    /// The browser's standard error so far (its last 16 KiB), for failure messages.
    public var log: String { stderr.text }
}

/// One tab of a `HeadlessBrowser`.
public final class BrowserPage: Sendable {
    let connection: DevToolsConnection
    let session: String
    let target: String
    let context: String
    let events: EventLog

    init(connection: DevToolsConnection, session: String, target: String, context: String, events: EventLog) {
        self.connection = connection
        self.session = session
        self.target = target
        self.context = context
        self.events = events
    }

    /// What a navigation ended with: the main document's HTTP status (nil for `about:` and `data:`
    /// pages) and URL, after redirects.
    public struct Loaded: Sendable {
        public var status: Int?
        public var url: String?
    }

    /// Sends a CDP command to this page and returns its result.
    @discardableResult
    public func send(_ method: String, _ params: [String: JSONValue] = [:]) async throws -> CDPObject {
        try await connection.send(method, params, session: session)
    }

    /// Sets the viewport (and the device: `mobile` for a phone).
    public func resize(width: Int, height: Int, mobile: Bool = false) async throws {
        try await send(
            "Emulation.setDeviceMetricsOverride",
            ["width": JSONValue(width), "height": JSONValue(height), "deviceScaleFactor": 1, "mobile": .bool(mobile)])
    }

    /// Navigates to `url` and waits for the page's load event.
    @discardableResult
    public func open(_ url: String) async throws -> Loaded {
        let from = events.mark()
        let result = try await send("Page.navigate", ["url": .string(url)])
        if let error = result["errorText"]?.string, !error.isEmpty {
            throw BrowserError("cannot open \(url): \(error)")
        }
        return try await loaded(since: from, what: "opening \(url)")
    }

    /// Runs `script` (which makes the page navigate: a click on a submit button, `form.submit()`)
    /// and waits for the new page's load event.
    @discardableResult
    public func navigate(by script: String) async throws -> Loaded {
        let from = events.mark()
        _ = try await evaluate(script)
        return try await loaded(since: from, what: "running \(script.prefix(80))")
    }

    /// Clicks the element `selector` names (a submit button) and waits for the page it loads.
    @discardableResult
    public func click(_ selector: String) async throws -> Loaded {
        try await navigate(
            by: """
                (() => { const e = document.querySelector(\(Self.jsString(selector)));
                  if (!e) throw new Error('no element matches ' + \(Self.jsString(selector))); e.click(); })()
                """)
    }

    /// Sets the value of the input `selector` names.
    public func fill(_ selector: String, _ value: String) async throws {
        _ = try await evaluate(
            """
            (() => { const e = document.querySelector(\(Self.jsString(selector)));
              if (!e) throw new Error('no element matches ' + \(Self.jsString(selector))); e.value = \(Self.jsString(value)); })()
            """)
    }

    /// The rendered DOM (`document.documentElement.outerHTML`), as `--dump-dom` prints it.
    public func dom() async throws -> String {
        guard let html = try await evaluate("document.documentElement.outerHTML").string else {
            throw BrowserError("the page has no document")
        }
        return html
    }

    /// Evaluates a JavaScript expression in the page and returns its value (by value: JSON-able).
    /// A thrown exception is an error. DevTools evaluation is not subject to the page's CSP.
    public func evaluate(_ expression: String) async throws -> JSValue {
        let r = try await send("Runtime.evaluate", ["expression": .string(expression), "returnByValue": true])
        if let details = r["exceptionDetails"]?.object {
            let exception = details["exception"]?["description"]?.string
            throw BrowserError("script failed: \(exception ?? details["text"]?.string ?? "exception")")
        }
        return JSValue(value: r["result"]?["value"])
    }

    /// Saves a PNG of the whole page (up to 8,000 pixels tall) at the current width.
    public func screenshot(to file: URL) async throws {
        let metrics = try await send("Page.getLayoutMetrics")
        let size = (metrics["cssContentSize"] ?? metrics["contentSize"])?.object
        let width = size?["width"]?.number.map { max(1, $0) } ?? 1280
        let height = size?["height"]?.number.map { min(8000, max(1, $0)) } ?? 900
        let shot = try await send(
            "Page.captureScreenshot",
            [
                "format": "png", "captureBeyondViewport": true,
                "clip": ["x": 0, "y": 0, "width": .number(width), "height": .number(height), "scale": 1],
            ])
        guard let base64 = shot["data"]?.string, let png = Data(base64Encoded: base64) else {
            throw BrowserError("Page.captureScreenshot gave no image")
        }
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: file)
    }

    /// Closes the tab and its browser context (its cookies go with it).
    public func close() async {
        _ = try? await connection.send("Target.closeTarget", ["targetId": .string(target)])
        _ = try? await connection.send("Target.disposeBrowserContext", ["browserContextId": .string(context)])
        connection.forget(session: session)
    }

    /// Waits for the main frame's load event logged after `from`; the status is the last main
    /// document response before it.
    func loaded(since from: Int, what: String) async throws -> Loaded {
        let index = try await events.wait(
            for: "Page.loadEventFired", from: from, within: HeadlessBrowser.limit, what: what)
        var out = Loaded(status: nil, url: nil)
        for e in events.events(from..<index) where e.method == "Network.responseReceived" {
            guard e.params["type"]?.string == "Document", let response = e.params["response"]?.object
            else { continue }
            out.status = response["status"]?.number.map { Int($0) }
            out.url = response["url"]?.string
        }
        return out
    }

    /// A JavaScript string literal.
    public static func jsString(_ s: String) -> String {
        let data =
            (try? JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed])) ?? Data("[\"\"]".utf8)
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }
}

/// A value returned by `BrowserPage.evaluate` (a JSON value).
public struct JSValue: Sendable {
    public let value: JSONValue?

    public var string: String? { value?.string }
    /// A boolean, or a number (non-zero is true).
    public var bool: Bool? {
        switch value {
        case .bool(let b)?: return b
        case .number(let d)?: return d != 0
        default: return nil
        }
    }
    public var int: Int? { value?.number.flatMap { $0.isFinite && abs($0) < 9e18 ? Int($0) : nil } }
    /// An array of strings only.
    public var strings: [String]? {
        guard let list = value?.array else { return nil }
        let out = list.compactMap(\.string)
        return out.count == list.count ? out : nil
    }
}

/// A CDP result or event's parameters (a JSON object).
public struct CDPObject: Sendable {
    public let raw: [String: JSONValue]

    public subscript(_ key: String) -> JSONValue? { raw[key] }
}

public struct BrowserError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Chromium's standard error: finds the DevTools URL, keeps the last 16 KiB for messages.
final class StderrLines: Sendable {
    private struct State {
        var text = ""
        var url: String? = nil
        var ended = false
        var waiter: CheckedContinuation<String, any Error>? = nil
    }

    private let state = Mutex(State())

    var text: String { state.withLock { $0.text } }

    func feed(_ data: Data) {
        let waiter: (CheckedContinuation<String, any Error>, String)? = state.withLock { s in
            s.text += String(decoding: data, as: UTF8.self)
            if s.url == nil, let r = s.text.range(of: "DevTools listening on ws://") {
                let rest = s.text[r.lowerBound...].dropFirst("DevTools listening on ".count)
                if let end = rest.firstIndex(where: \.isNewline) {
                    s.url = String(rest[..<end])
                }
            }
            if s.text.utf8.count > 16 << 10 { s.text = String(s.text.suffix(16 << 10)) }
            if let url = s.url, let w = s.waiter {
                s.waiter = nil
                return (w, url)
            }
            return nil
        }
        if let (w, url) = waiter { w.resume(returning: url) }
    }

    func end() {
        let waiter = state.withLock { s in
            s.ended = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(throwing: BrowserError("Chromium ended before it listened for DevTools: \(text)"))
    }

    private func fail(_ message: String) {
        let waiter = state.withLock { s in
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(throwing: BrowserError(message))
    }

    /// The `ws://` URL, once Chromium prints it.
    func devToolsURL(within limit: Duration) async throws -> String {
        let timer = Task {
            try await Task.sleep(for: limit)
            self.fail("Chromium did not listen for DevTools within \(limit): \(self.text)")
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { c in
            let now: Result<String, any Error>? = state.withLock { s in
                if let url = s.url { return .success(url) }
                if s.ended {
                    return .failure(BrowserError("Chromium ended before it listened for DevTools: \(s.text)"))
                }
                s.waiter = c
                return nil
            }
            if let now { c.resume(with: now) }
        }
    }
}

/// The events of one page, in arrival order, and waits for them. A wait names the index it looks
/// from (`mark()` taken before the command that causes the event), so an event that arrives before
/// the wait begins is not missed.
final class EventLog: Sendable {
    struct Event: Sendable {
        var method: String
        var params: CDPObject
    }

    private struct Waiter {
        var from: Int
        var method: String
        var continuation: CheckedContinuation<Int, any Error>
    }

    private struct State {
        var events: [Event] = []
        var waiters: [UUID: Waiter] = [:]
        var closed: String? = nil
    }

    private let state = Mutex(State())

    func mark() -> Int { state.withLock { $0.events.count } }

    func events(_ range: Range<Int>) -> [Event] {
        state.withLock { s in Array(s.events[max(0, range.lowerBound)..<min(range.upperBound, s.events.count)]) }
    }

    func append(_ method: String, _ params: CDPObject) {
        let (index, ready) = state.withLock { s in
            s.events.append(Event(method: method, params: params))
            let index = s.events.count - 1
            var out: [CheckedContinuation<Int, any Error>] = []
            for (id, w) in s.waiters where w.method == method && w.from <= index {
                out.append(w.continuation)
                s.waiters[id] = nil
            }
            return (index, out)
        }
        for c in ready { c.resume(returning: index) }
    }

    func close(_ why: String) {
        let waiting = state.withLock { s in
            s.closed = why
            defer { s.waiters = [:] }
            return s.waiters.values.map(\.continuation)
        }
        for c in waiting { c.resume(throwing: BrowserError(why)) }
    }

    /// The index of the first `method` event at or after `from`, waiting for it up to `limit`.
    func wait(for method: String, from: Int, within limit: Duration, what: String) async throws -> Int {
        let id = UUID()
        let timer = Task {
            try await Task.sleep(for: limit)
            let w = self.state.withLock { $0.waiters.removeValue(forKey: id) }
            w?.continuation.resume(throwing: BrowserError("no \(method) within \(limit) (\(what))"))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { c in
            let now: Result<Int, any Error>? = state.withLock { s in
                if from < s.events.count, let i = s.events[from...].firstIndex(where: { $0.method == method }) {
                    return .success(i)
                }
                if let why = s.closed { return .failure(BrowserError(why)) }
                s.waiters[id] = Waiter(from: from, method: method, continuation: c)
                return nil
            }
            if let now { c.resume(with: now) }
        }
    }
}

/// The one WebSocket to the browser: commands matched to their answers by id, events routed to
/// their page's log by session id.
final class DevToolsConnection: Sendable {
    private struct Pending {
        var method: String
        var continuation: CheckedContinuation<CDPObject, any Error>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var nextID = 1
        var pending: [Int: Pending] = [:]
        var logs: [String: EventLog] = [:]
        var closed: String? = nil
        var task: Task<Void, Never>? = nil
    }

    private let state = Mutex(State())
    private let outgoing: AsyncStream<String>.Continuation

    private init(outgoing: AsyncStream<String>.Continuation) {
        self.outgoing = outgoing
    }

    static func open(url: String) -> DevToolsConnection {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let c = DevToolsConnection(outgoing: continuation)
        let task = Task { await c.run(url: url, outgoing: stream) }
        c.state.withLock { $0.task = task }
        return c
    }

    private func run(url: String, outgoing: AsyncStream<String>) async {
        var logger = Logger(label: "klaxon.testing.devtools")
        logger.logLevel = .critical
        var configuration = WebSocketClientConfiguration(maxFrameSize: Self.maxMessage)
        configuration.autoPing = .disabled
        do {
            try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) {
                inbound, outbound, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in outgoing { try await outbound.write(.text(text)) }
                    }
                    for try await message in inbound.messages(maxSize: Self.maxMessage) {
                        if case .text(let text) = message { self.receive(text) }
                    }
                    group.cancelAll()
                }
            }
            finish("the DevTools connection closed")
        } catch {
            finish("the DevTools connection failed: \(error)")
        }
    }

    /// Screenshots come back as one base64 message.
    static let maxMessage = 64 << 20

    private func receive(_ text: String) {
        guard let object = JSONValue.parse(text.utf8)?.object else { return }
        if let number = object["id"]?.number, number.isFinite, abs(number) < 9e18 {
            let id = Int(number)
            guard let p = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
            p.timer?.cancel()
            if let error = object["error"]?.object {
                p.continuation.resume(
                    throwing: BrowserError("\(p.method): \(error["message"]?.string ?? "\(error)")"))
            } else {
                p.continuation.resume(returning: CDPObject(raw: object["result"]?.object ?? [:]))
            }
        } else if let method = object["method"]?.string, let session = object["sessionId"]?.string {
            let log = state.withLock { $0.logs[session] }
            log?.append(method, CDPObject(raw: object["params"]?.object ?? [:]))
        }
    }

    /// Fails every pending command and wait: the connection is gone.
    private func finish(_ why: String) {
        let (pending, logs) = state.withLock { s in
            if s.closed == nil { s.closed = why }
            defer {
                s.pending = [:]
                s.logs = [:]
            }
            return (Array(s.pending.values), Array(s.logs.values))
        }
        for p in pending {
            p.timer?.cancel()
            p.continuation.resume(throwing: BrowserError("\(p.method): \(why)"))
        }
        for log in logs { log.close(why) }
        outgoing.finish()
    }

    /// The event log of a session (created on first use).
    func events(for session: String) -> EventLog {
        state.withLock { s in
            if let log = s.logs[session] { return log }
            let log = EventLog()
            s.logs[session] = log
            return log
        }
    }

    func forget(session: String) {
        let log = state.withLock { $0.logs.removeValue(forKey: session) }
        log?.close("the page was closed")
    }

    /// Sends a command (to a page when `session` is given) and awaits its answer.
    func send(
        _ method: String, _ params: [String: JSONValue] = [:], session: String? = nil,
        within limit: Duration = HeadlessBrowser.limit
    ) async throws -> CDPObject {
        var message: [String: JSONValue] = ["method": .string(method), "params": .object(params)]
        if let session { message["sessionId"] = .string(session) }
        return try await withCheckedThrowingContinuation { c in
            let id: Int? = state.withLock { s in
                guard s.closed == nil else { return nil }
                let id = s.nextID
                s.nextID += 1
                s.pending[id] = Pending(method: method, continuation: c, timer: nil)
                return id
            }
            guard let id else {
                c.resume(throwing: BrowserError("\(method): the DevTools connection is closed"))
                return
            }
            message["id"] = JSONValue(id)
            guard let data = try? JSONEncoder().encode(message) else {
                state.withLock { _ = $0.pending.removeValue(forKey: id) }
                c.resume(throwing: BrowserError("\(method): the parameters are not JSON"))
                return
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                let p = self.state.withLock { $0.pending.removeValue(forKey: id) }
                p?.continuation.resume(throwing: BrowserError("\(method) had no answer within \(limit)"))
            }
            let stillPending = state.withLock { s in
                guard s.pending[id] != nil else { return false }
                s.pending[id]?.timer = timer
                return true
            }
            if !stillPending { timer.cancel() }
            outgoing.yield(String(decoding: data, as: UTF8.self))
        }
    }

    /// Closes the connection (after the browser has gone) and awaits its task.
    func shutdown() async {
        outgoing.finish()
        let task = state.withLock { $0.task }
        task?.cancel()
        if let task { _ = await ended(task, within: .seconds(30)) }
        finish("the browser was closed")
    }
}
