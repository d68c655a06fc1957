import Foundation
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import Testing

/// The package root (this file is Tests/KlaxonAppTests/Support.swift).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The `klaxon` executable built beside the test bundle.
let klaxonBinary: URL = {
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for dir in [beside, beside.deletingLastPathComponent(), packageRoot.appendingPathComponent(".build/debug")] {
        let candidate = dir.appendingPathComponent("klaxon")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    return beside.appendingPathComponent("klaxon")
}()

struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
    /// Killed for running past its limit: it hung.
    var killed = false
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
}

/// Runs `klaxon` with arguments in a working directory and collects its output. The wait for the
/// child does not block one of Swift's cooperative threads: on a 2-core machine two tests blocking
/// those would starve the in-process servers (HTTP sink, SMTP) the child is talking to. A child
/// still running after `limit`, or when the test is cancelled, is killed (`Run.killed`), so a hang
/// fails its test instead of holding the suite: the limit stands for "hung", as every command here
/// takes seconds at most.
func klaxonAsync(
    _ arguments: [String], in dir: URL? = nil, environment: [String: String] = [:], limit: Duration = .seconds(120)
) async throws -> Run {
    let p = Process()
    p.executableURL = klaxonBinary
    p.arguments = arguments
    if !environment.isEmpty {
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    }
    p.currentDirectoryURL = dir ?? packageRoot
    // Output goes to files, so a large output can never block the child on a full pipe.
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-run-\(UUID().uuidString)")
    let outURL = base.appendingPathExtension("out")
    let errURL = base.appendingPathExtension("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
    }
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    let exit = ProcessExit(p)
    try await launchProcess(p)
    var killed = false
    if await !exit.wait(within: limit), !exit.hasExited {
        kill(p.processIdentifier, SIGKILL)
        killed = true
        _ = await exit.wait(within: .seconds(60))  // a killed process ends at once
    }
    try out.close()
    try err.close()
    return Run(
        status: p.terminationStatus,
        stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
        stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self), killed: killed)
}

/// A temporary folder with helpers to write files into it.
final class Scratch {
    let dir: URL

    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: dir) }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let url = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
}

func jsonObjects(_ lines: [String]) throws -> [[String: Any]] {
    try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
}

/// A `klaxon run` child and the port it listens on (read from its log).
struct DaemonProcess {
    let process: Process
    let log: URL
    let port: Int
    let exit: ProcessExit

    /// How long to wait for the exit after SIGTERM. The product's limit: the daemon stops within 17 s
    /// whatever its services do, and its watchdog exits the process at 19 s (`StopWatchdog`); the
    /// rest is room for a loaded machine to deliver the signal and reap the process.
    static let stopLimit = Duration.seconds(25)

    var base: String { "http://127.0.0.1:\(port)" }
    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Starts `klaxon run --config config` in `dir` and waits until it listens. A daemon that exits
    /// first, or has not said where it listens after a minute (it takes well under a second), is an
    /// error; the process is then killed. `prefix` is a launcher that execs the daemon with its
    /// arguments appended (`prlimit --fsize=N`), so the process is still the daemon's.
    static func start(
        config: String, in dir: URL, prefix: [String] = [], arguments: [String] = []
    ) async throws -> DaemonProcess {
        let p = Process()
        if let launcher = prefix.first {
            p.executableURL = URL(fileURLWithPath: launcher)
            p.arguments = Array(prefix.dropFirst()) + [klaxonBinary.path, "run", "--config", config] + arguments
        } else {
            p.executableURL = klaxonBinary
            p.arguments = ["run", "--config", config] + arguments
        }
        p.currentDirectoryURL = dir
        let log = dir.appendingPathComponent("daemon-\(UUID().uuidString.prefix(8)).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        p.standardError = try FileHandle(forWritingTo: log)
        p.standardOutput = FileHandle.nullDevice
        let exit = ProcessExit(p)
        try await launchProcess(p)
        // The port comes from the log line `… msg=listening address=127.0.0.1:PORT`.
        var port = 0
        do {
            try await poll(until: "klaxon run listens") {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                port = listeningPort(text) ?? 0
                guard port == 0 else { return true }
                if exit.hasExited { throw SinkError(message: "klaxon run exited: \(text)") }
                return false
            }
        } catch {
            let daemon = DaemonProcess(process: p, log: log, port: port, exit: exit)
            await daemon.killIfRunning()
            throw error
        }
        return DaemonProcess(process: p, log: log, port: port, exit: exit)
    }

    /// The port of the daemon's `listening` line (logfmt or JSON) in `log`, if it has logged it.
    static func listeningPort(_ log: String) -> Int? {
        for marker in ["msg=listening address=127.0.0.1:", #""msg":"listening","address":"127.0.0.1:"#] {
            if let r = log.range(of: marker) { return Int(log[r.upperBound...].prefix { $0.isNumber }) }
        }
        return nil
    }

    /// Starts a daemon, runs `body` with it, and makes sure the process is gone before returning:
    /// one still running then (the body threw before stopping it) is killed.
    static func with<T>(
        config: String, in dir: URL, isolation: isolated (any Actor)? = #isolation,
        _ body: (DaemonProcess) async throws -> T
    ) async throws -> T {
        let daemon = try await start(config: config, in: dir)
        let outcome = await Result { try await body(daemon) }
        await daemon.killIfRunning()
        return try outcome.get()
    }

    /// SIGTERM, then the exit, within the product's limit for a stop; the status. A daemon that did
    /// not exit in time is killed, and its status is nil.
    func stop() async -> Int32? {
        process.terminate()
        return await exited() ? process.terminationStatus : nil
    }

    /// Waits for the exit within the product's stop limit; a daemon still running then is killed.
    func exited() async -> Bool {
        if await exit.wait(within: Self.stopLimit) { return true }
        await killIfRunning()
        return false
    }

    /// SIGKILL, if it still runs, and the end (nothing can hold a killed process for long).
    func killIfRunning() async {
        guard !exit.hasExited else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = await exit.wait(within: .seconds(60))
    }
}

/// Starts the daemon's HTTP application over `store` on a free loopback port; returns the port and
/// the task running it (cancel it to stop the server).
func startHTTP(
    store: any Store, settings: KlaxonHTTP.Settings, logger: Logger = quietLogger,
    chat: ChatEndpoints.Settings = .init(),
    now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
) async -> (port: Int, task: Task<Void, any Error>) {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let app = KlaxonHTTP.application(
        store: store, settings: settings, metrics: .init(), logger: logger, chat: chat,
        onRunning: { port in
            continuation.yield(port)
            continuation.finish()
        }, now: now)
    let task = Task {
        defer { continuation.finish() }
        try await app.run()
    }
    var port = 0
    for await p in stream { port = p }
    return (port, task)
}

/// A logger that says nothing below critical.
let quietLogger: Logger = {
    var logger = Logger(label: "klaxon.test")
    logger.logLevel = .critical
    return logger
}()
