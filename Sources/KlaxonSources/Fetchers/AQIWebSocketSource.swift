import Foundation
import HummingbirdWSClient
import KlaxonCore
import Logging
import NIOCore

/// `kind: aqi-websocket` — a WebSocket feed whose frames are JSON arrays of `{"city", "aqi"}` (a
/// varying subset of cities, no timestamp: each sample is stamped with its receive time). Per city
/// the first two samples are kept, then at most one per `sample_every`. The connection is pinged
/// to find dead peers, frames are bounded, a malformed frame is counted and skipped (the connection
/// stays), and after an error or a close the source reconnects with exponential backoff and jitter.
public struct AQIWebSocketSource: StreamingSource {
    public static let kindName = "aqi-websocket"

    public var name: String
    /// `ws://…` or `wss://…`.
    public var url: String
    /// Seconds between kept samples of one city (after its first two).
    public var sampleEvery: Int64
    /// Largest frame accepted, in bytes; a larger one closes the connection (and it reconnects).
    public var maxFrame: Int
    /// Seconds between pings; a peer that misses a pong is dropped and the source reconnects.
    public var pingEvery: Double
    public var backoff: Backoff
    /// Seconds `klaxon fetch` listens for (the daemon listens for as long as it runs).
    public var listen: Double

    public init(
        name: String, url: String, sampleEvery: Int64 = 30, maxFrame: Int = 1 << 20, pingEvery: Double = 20,
        backoff: Backoff = Backoff(initial: 1, cap: 60), listen: Double = 60
    ) {
        self.name = name
        self.url = url
        self.sampleEvery = sampleEvery
        self.maxFrame = maxFrame
        self.pingEvery = pingEvery
        self.backoff = backoff
        self.listen = listen
    }

    public var every: Int64 { 0 }

    /// When a connection failed or came up, for the log (`since`): the wall clock, not `run`'s
    /// `now`, which stamps samples (a test's, or the demo's compressed clock).
    static func wallClock() -> Int64 { Int64(Date().timeIntervalSince1970) }
    public var covers: [String] { [] }

    /// Listens for `listen` seconds and returns what it kept, as one batch.
    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        let collected = Collected()
        let stats = await run(for: listen) { collected.add($0) }
        if stats.frames == 0, let error = stats.lastError {
            throw SourceError(kind: .connection, source: name, message: "\(url): \(error)")
        }
        return FetchResult(
            batch: SourceBatch(readings: collected.all, gaps: stats.skippedEntries), cursor: nil,
            requests: stats.connections)
    }

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var readings: [Reading] = []
        func add(_ rs: [Reading]) {
            lock.lock()
            readings += rs
            lock.unlock()
        }
        var all: [Reading] {
            lock.lock()
            defer { lock.unlock() }
            return readings
        }
    }

    /// What a run saw.
    public struct Stats: Sendable, Equatable {
        public var connections = 0
        public var frames = 0
        /// Frames that were not a JSON array of `{city, aqi}`: skipped, connection kept.
        public var malformedFrames = 0
        /// Entries without a city or a usable AQI.
        public var skippedEntries = 0
        /// Samples kept (handed to `deliver`).
        public var kept = 0
        /// Samples thinned out by `sample_every`.
        public var thinned = 0
        /// Connections that ended in an error (refused, dead peer, oversized frame, …).
        public var errors = 0
        public var lastError: String?

        public init() {}
    }

    /// Shared between the reconnect loop and the connection handler.
    final class RunState: @unchecked Sendable {
        private let lock = NSLock()
        private var stats = Stats()
        private var sampler: Sampler
        /// Set once a connection has delivered a frame: the backoff starts again from the beginning.
        private var healthy = false
        /// Connections that failed in a row: one log line per change (`SourceStreak`).
        private var streak = SourceStreak()

        init(sampleEvery: Int64) { sampler = Sampler(every: sampleEvery) }

        func with<T>(_ body: (inout Stats, inout Sampler, inout Bool) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(&stats, &sampler, &healthy)
        }

        var snapshot: Stats { with { s, _, _ in s } }

        /// A connection failed: the streak's line.
        func failed(source: String, error: String, at now: Int64) -> SourceStreak.Line {
            lock.lock()
            defer { lock.unlock() }
            stats.errors += 1
            stats.lastError = error
            return streak.failed(source: source, error: error, at: now)
        }

        /// A connection is up: the recovery's line, after failures.
        func connected(source: String, at now: Int64) -> SourceStreak.Line? {
            lock.lock()
            defer { lock.unlock() }
            return streak.succeeded(source: source, at: now)
        }
    }

    public func stream(
        now: @escaping @Sendable () -> Int64, logger: Logger,
        deliver: @escaping @Sendable ([Reading]) async throws -> Void
    ) async {
        _ = await run(for: nil, now: now, logger: logger, deliver: deliver)
    }

    /// Listens until `seconds` have passed (nil: until cancelled), handing kept samples to `deliver`
    /// as they arrive. `now` stamps samples (seconds since the epoch).
    public func run(
        for seconds: Double?, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        logger: Logger = Logger(label: "klaxon.aqi-websocket"),
        deliver: @escaping @Sendable ([Reading]) async throws -> Void
    ) async -> Stats {
        let state = RunState(sampleEvery: sampleEvery)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.loop(state: state, now: now, logger: logger, deliver: deliver) }
            if let seconds {
                group.addTask { try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000))) }
            }
            _ = await group.next()
            group.cancelAll()
        }
        return state.snapshot
    }

    func loop(
        state: RunState, now: @escaping @Sendable () -> Int64, logger: Logger,
        deliver: @escaping @Sendable ([Reading]) async throws -> Void
    ) async {
        var attempt = 0
        while !Task.isCancelled {
            state.with { s, _, healthy in
                s.connections += 1
                healthy = false
            }
            let maxFrame = self.maxFrame
            var configuration = WebSocketClientConfiguration(maxFrameSize: maxFrame)
            configuration.autoPing = .enabled(timePeriod: .milliseconds(Int64(pingEvery * 1000)))
            let client = WebSocketClient(url: url, configuration: configuration, logger: logger) {
                inbound, _, _ in
                // Connected (the upgrade succeeded): a source that was failing has recovered.
                state.connected(source: self.name, at: Self.wallClock())?.log(to: logger)
                for try await message in inbound.messages(maxSize: maxFrame) {
                    let data: Data
                    switch message {
                    case .text(let text): data = Data(text.utf8)
                    case .binary(let buffer): data = Data(buffer.readableBytesView)
                    }
                    let stamp = now()
                    var kept: [Reading] = []
                    do {
                        let (readings, skipped) = try AQIFrameParser.parse(data, receivedAt: stamp)
                        kept = state.with { s, sampler, healthy in
                            s.frames += 1
                            s.skippedEntries += skipped
                            healthy = true
                            var out: [Reading] = []
                            for r in readings {
                                if sampler.keep(r.station, at: r.time) {
                                    var r = r
                                    r.source = self.name
                                    out.append(r)
                                } else {
                                    s.thinned += 1
                                }
                            }
                            s.kept += out.count
                            return out
                        }
                    } catch {
                        state.with { s, _, healthy in
                            s.frames += 1
                            s.malformedFrames += 1
                            healthy = true
                        }
                        logger.warning(
                            "malformed frame skipped",
                            metadata: ["source": "\(self.name)", "error": "\(ErrorWords.describe(error))"])
                    }
                    if !kept.isEmpty { try await deliver(kept) }
                }
            }
            do {
                // `run` awaits the server's answer to the upgrade request with no timeout and
                // without heeding cancellation, so a server that accepts the connection and never
                // answers would hold a stop for good. The attempt runs in a task of its own: when
                // the source is cancelled, the attempt is cancelled too and left to end by itself.
                let attempt = Task { try await client.run() }
                guard let result = await Bounded.result(of: attempt, within: nil, orUntilCancelled: true) else {
                    attempt.cancel()
                    return
                }
                let close = try result.get()
                if close?.closeCode != .normalClosure {
                    // Dropped without a close handshake, or closed for a reason (a frame over
                    // max_frame_bytes, a missed pong, a server error).
                    let why =
                        close.map { "connection closed: \($0.closeCode)\($0.reason.map { " (\($0))" } ?? "")" }
                        ?? "connection dropped without a close frame"
                    state.failed(source: name, error: why, at: Self.wallClock()).log(to: logger)
                } else {
                    logger.info("connection closed; reconnecting", metadata: ["source": "\(name)"])
                }
            } catch is CancellationError {
                return
            } catch {
                // Refused, unreachable, no upgrade: one line per change of the streak, not per attempt.
                state.failed(source: name, error: ErrorWords.describe(error), at: Self.wallClock()).log(to: logger)
            }
            if Task.isCancelled { return }
            let wasHealthy = state.with { _, _, healthy in healthy }
            attempt = wasHealthy ? 1 : attempt + 1
            let wait = backoff.delay(attempt: attempt, random: Double.random(in: 0..<1))
            try? await Task.sleep(for: .milliseconds(Int64(wait * 1000)))
        }
    }
}
