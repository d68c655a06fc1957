import Foundation
import KlaxonCore
import KlaxonSources
import KlaxonTesting
import Logging
import Testing

@Suite("aqi-websocket: connection failures and recovery logged by the streak rule", .serialized)
struct SourceStreakLogTests {
    /// The failure lines' (level, failures) so far.
    static func failures(_ capture: LogCapture) -> [(String, Int)] {
        capture.all.compactMap { line in
            guard line.contains("source failing") || line.contains("source still failing") else { return nil }
            guard let r = line.range(of: #""failures": "#) else { return nil }
            let n = Int(line[r.upperBound...].prefix { $0.isNumber }) ?? 0
            return (String(line.prefix { $0 != " " }), n)
        }
    }

    // The whole pattern (1, 2, 4, 8, 16 …) is SourceStreakTests' job, on values. This test checks that the
    // websocket source feeds the streak once per refused connection, so it needs only four of them: on a
    // loaded machine at the suite's start, nine took more than a minute to come (issue 39, item 18).
    @Test("N refused connections log lines 1, 2, 4 as warnings (the rest debug); the recovery one notice")
    func refusedThenRecovered() async throws {
        var closed: ClosedPort? = try ClosedPort()
        let port = closed!.port
        let capture = LogCapture()
        let source = AQIWebSocketSource(
            name: "cities", url: "ws://127.0.0.1:\(port)/feed", sampleEvery: 30, pingEvery: 5,
            backoff: Backoff(initial: 0.01, cap: 0.02))
        let task = Task {
            await source.run(for: nil, logger: capture.logger("klaxon", level: .trace)) { _ in }
        }
        var server: WSTestServer? = nil
        let outcome = await Result {
            // The bound only says when to give up on a broken source, not how fast it should be.
            try await poll(until: "four refused connections", within: .seconds(600)) {
                Self.failures(capture).count >= 4
            }
            closed = nil  // the port is free: the server takes it
            server = try await WSTestServer.start(
                scripts: [[.send(#"[{"city":"Pune","aqi":80}]"#)]], port: port)
            try await poll(until: "the source recovers", within: .seconds(600)) {
                capture.all.contains { $0.contains("source recovered") }
            }
        }
        task.cancel()
        _ = await task.value
        if let server { await server.stop() }
        try outcome.get()

        let failures = Self.failures(capture)
        // Numbered 1, 2, 3 … in order, one line each.
        #expect(failures.map(\.1) == Array(1...failures.count))
        let warned = failures.filter { $0.0 == "warning" }.map(\.1)
        #expect(warned == [1, 2, 4, 8, 16, 32, 64].filter { $0 <= failures.count }, "\(capture.all)")
        #expect(failures.allSatisfy { $0.0 == "warning" || $0.0 == "debug" })
        let recovered = capture.all.filter { $0.contains("source recovered") }
        #expect(recovered.count == 1)
        #expect(recovered.first?.hasPrefix("notice ") == true)
        #expect(
            recovered.first?.contains(#""failures": \#(failures.count)]"#) == true
                || recovered.first?.contains(#""failures": \#(failures.count),"#) == true, "\(recovered)")
        // No other warning: not one per reconnect.
        let warnings = capture.all.filter { $0.hasPrefix("warning ") }
        #expect(warnings.count == warned.count, "\(warnings)")
        #expect(warnings.first?.contains("connection refused") == true, "\(warnings)")
    }
}
