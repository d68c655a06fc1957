import Foundation
import KlaxonCore
import KlaxonSources
import KlaxonTesting
import Logging
import Synchronization
import Testing

/// Collects what a source delivers, and hands out a clock that moves 10 s per call.
final class Collector: Sendable {
    let readings = Mutex<[Reading]>([])
    let tick = Mutex<Int64>(0)

    func deliver(_ rs: [Reading]) { readings.withLock { $0 += rs } }
    func now() -> Int64 {
        tick.withLock {
            $0 += 10
            return $0
        }
    }
    var kept: [String] { readings.withLock { $0.map { "\($0.station) \(formatValue($0.value))@\($0.time)" } } }
}

@Suite("aqi-websocket source against a real WebSocket server", .serialized)
struct AQIWebSocketTests {
    /// Runs the source until `done` holds, then stops it: fast on a quiet machine, patient on a loaded
    /// one. The source is stopped before this returns, also when `done` never comes (`poll`'s bound).
    func listen(
        _ s: AQIWebSocketSource, _ c: Collector, logger: Logger = Logger(label: "klaxon.test"),
        until done: @escaping @Sendable (Collector) -> Bool
    ) async throws -> AQIWebSocketSource.Stats {
        let task = Task { await s.run(for: nil, now: { c.now() }, logger: logger) { c.deliver($0) } }
        var waited: (any Error)? = nil
        do {
            try await poll(until: "the source delivers what the server sent") { done(c) }
            // Let a frame in flight land, then stop.
            try await Task.sleep(for: .milliseconds(100))
        } catch {
            waited = error
        }
        task.cancel()
        let stats = await task.value
        if let waited { throw waited }
        return stats
    }

    func source(_ server: WSTestServer, maxFrame: Int = 1 << 16, ping: Double = 5) -> AQIWebSocketSource {
        AQIWebSocketSource(
            name: "cities", url: server.url, sampleEvery: 30, maxFrame: maxFrame, pingEvery: ping,
            backoff: Backoff(initial: 0.05, cap: 0.2))
    }

    @Test("samples per city (first two, then one per sample_every), skips garbage, reconnects after a close")
    func samplesAndReconnects() async throws {
        try await WSTestServer.with(scripts: [
            [
                .send(#"[{"city":"Mumbai","aqi":100},{"city":"Delhi","aqi":200.5}]"#),
                .send(#"[{"city":"Mumbai","aqi":101}]"#),
                .send("not json at all"),
                .send(#"[{"city":"Mumbai","aqi":102},{"city":"Delhi","aqi":201},{"aqi":5},{"city":"Pune"}]"#),
                .close,
            ],
            [.send(#"[{"city":"Delhi","aqi":300}]"#), .send(#"[{"city":"Mumbai","aqi":103}]"#)],
        ]) { server in
            let c = Collector()
            let stats = try await listen(source(server), c) { $0.kept.count >= 5 }
            // Clock: frame 1 at 10, frame 2 at 20, garbage at 30, frame 4 at 40, frame 5 at 50, frame 6 at 60.
            #expect(
                c.kept == ["Mumbai 100@10", "Delhi 200.5@10", "Mumbai 101@20", "Delhi 201@40", "Mumbai 103@60"])
            #expect(stats.malformedFrames == 1)
            #expect(stats.skippedEntries == 2)
            #expect(stats.thinned == 2)  // Mumbai 102 at 40 (20 s after 20), Delhi 300 at 50 (10 s after 40)
            #expect(stats.frames == 6)
            #expect(await server.connections() >= 2)
            #expect(c.readings.withLock { $0.allSatisfy { $0.metric == "aqi" && $0.source == "cities" } })
        }
    }

    @Test("a peer that stops answering pings is dropped and the source reconnects")
    func deadPeer() async throws {
        try await WSTestServer.with(scripts: [
            [.send(#"[{"city":"Kolkata","aqi":150}]"#), .pause(30)],
            [.send(#"[{"city":"Chennai","aqi":80}]"#)],
        ]) { server in
            let c = Collector()
            let stats = try await listen(source(server, ping: 0.3), c) { $0.kept.count >= 2 }
            #expect(c.kept == ["Kolkata 150@10", "Chennai 80@20"])
            #expect(await server.connections() >= 2)
            #expect(stats.connections >= 2)
        }
    }

    @Test("an oversized frame ends the connection; the source reconnects and goes on")
    func oversizedFrame() async throws {
        let big = "[" + Array(repeating: #"{"city":"X","aqi":1}"#, count: 100).joined(separator: ",") + "]"
        try await WSTestServer.with(scripts: [
            [.send(big)],
            [.send(#"[{"city":"Agra","aqi":90}]"#)],
        ]) { server in
            let c = Collector()
            let stats = try await listen(source(server, maxFrame: 256), c) { $0.kept.count >= 1 }
            #expect(c.kept == ["Agra 90@10"])
            #expect(stats.errors >= 1, "\(stats)")
            #expect(await server.connections() >= 2)
        }
    }

    @Test("a refused connection is retried with backoff, each attempt counted as an error")
    func refusedThenRetried() async throws {
        // A port with nothing listening: every attempt fails fast, and the source keeps trying.
        let c = Collector()
        let s = AQIWebSocketSource(
            name: "cities", url: "ws://127.0.0.1:9/feed", backoff: Backoff(initial: 0.05, cap: 0.1))
        let logs = LogCapture()
        let stats = try await listen(s, c, logger: logs.logger()) { _ in
            // One line per failed attempt (at debug after the 2nd, but for the 4th, 8th …).
            logs.all.filter { $0.contains("source failing") || $0.contains("source still failing") }.count >= 3
        }
        #expect(stats.errors >= 3)
        // Every finished attempt failed; the one in flight when the run ended is abandoned uncounted.
        #expect((0...1).contains(stats.connections - stats.errors), "\(stats)")
        #expect(c.kept.isEmpty)
    }
}

@Suite("sampler")
struct SamplerTests {
    @Test("first two samples per key, then one per period")
    func sampling() {
        var s = Sampler(every: 30)
        let kept = [0, 5, 10, 34, 36, 64, 66].map { s.keep("a", at: Int64($0)) }
        #expect(kept == [true, true, false, false, true, false, true])
        let other = s.keep("b", at: 66)
        #expect(other)
    }
}
