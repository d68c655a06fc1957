// Delivery benchmarks (release build): the durable outbox to a webhook sink on 127.0.0.1.
//
// 1. Throughput: 10,000 notifications queued, then delivered; messages per second (target ≥ 2,000).
// 2. Latency: transitions written at 100 per second for 10 s while the dispatcher runs; time from the
//    transition's commit to the request's arrival at the sink; p50/p99 (target p99 ≤ 200 ms).
import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Synchronization

func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

func makeTransition(_ i: Int) -> Transition {
    Transition(
        rule: "bench", kind: "threshold", station: "S\(i)", metric: "gage_height", state: .firing,
        at: 1_800_000_000 + Int64(i),
        value: 12.5, unit: "ft", severity: .warning, summary: "gage_height at S\(i) is 12.5 ft",
        explanation: "12.5 ≥ 12")
}

func queue(_ store: any Store, _ range: Range<Int>, now: Int64) async throws {
    try await store.record(
        range.map { i in
            let t = makeTransition(i)
            return (t, t.summary, [PlannedDelivery(receiver: "hook", route: nil, groupKey: "station=S\(i)")])
        }, now: now)
}

func tempStore() throws -> (any Store, URL) {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
        "klaxon-delivery-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return (try SQLiteStore.open(path: dir.appendingPathComponent("k.sqlite").path), dir)
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

let sink = try await HTTPSink.start()
let notifier = try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/hook"), preset: .generic))
var results: [(String, String, String, Bool)] = []

// 1. Throughput.
do {
    let (store, dir) = try tempStore()
    defer { try? FileManager.default.removeItem(at: dir) }
    try await queue(store, 0..<10_000, now: nowMillis())
    let dispatcher = Dispatcher(store: store, notifiers: ["hook": notifier], routing: Routing())
    let start = ContinuousClock.now
    let pass = try await dispatcher.runUntilEmpty(deadline: nowMillis() + 120_000)
    let elapsed = start.duration(to: .now)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let received = await sink.requests().count
    let rate = Double(pass.sent) / seconds
    print(
        String(
            format: "throughput: %d sent (%d received) in %.2f s = %.0f messages/s (target ≥ 2000): %@", pass.sent,
            received, seconds, rate, rate >= 2000 ? "PASS" : "MISS"))
    results.append(
        (
            "Delivery of 10,000 webhook messages through the outbox", String(format: "%.0f messages/s", rate),
            "≥ 2,000/s", rate >= 2000
        ))
    await sink.clear()
}

// 2. Latency at 100 transitions per second.
do {
    let (store, dir) = try tempStore()
    defer { try? FileManager.default.removeItem(at: dir) }
    let dispatcher = Dispatcher(store: store, notifiers: ["hook": notifier], routing: Routing())
    let committed = Mutex<[Int: Int64]>([:])
    let runner = Task { try await dispatcher.run() }
    let count = 1000
    let start = nowMillis()
    for i in 0..<count {
        let due = start + Int64(i) * 10
        let wait = due - nowMillis()
        if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
        try await queue(store, i..<(i + 1), now: nowMillis())
        let at = nowMillis()
        committed.withLock { $0[i] = at }
    }
    let got = await sink.waitForRequests(count, timeout: 30)
    runner.cancel()
    var latencies: [Double] = []
    for r in got {
        guard let alerts = JSONValue.parse(r.body)?["alerts"]?.array else { continue }
        for a in alerts {
            guard let st = a["labels"]?["station"]?.string, let i = Int(st.dropFirst()),
                let at = committed.withLock({ $0[i] })
            else { continue }
            latencies.append(r.receivedAt.timeIntervalSince1970 * 1000 - Double(at))
        }
    }
    latencies.sort()
    let p50 = percentile(latencies, 0.5)
    let p99 = percentile(latencies, 0.99)
    print(
        String(
            format:
                "latency at 100 transitions/s: %d delivered, p50 %.1f ms, p99 %.1f ms, max %.1f ms (target p99 ≤ 200 ms): %@",
            latencies.count, p50, p99, latencies.last ?? .nan, p99 <= 200 ? "PASS" : "MISS"))
    results.append(
        (
            "Transition written → request received, 100 transitions/s",
            String(format: "p50 %.0f ms, p99 %.0f ms", p50, p99), "p99 ≤ 200 ms", p99 <= 200
        ))
}
await sink.stop()

print("\n| benchmark | measured | target | |\n|---|---|---|---|")
for (name, measured, target, ok) in results { print("| \(name) | \(measured) | \(target) | \(ok ? "pass" : "MISS") |") }
exit(results.allSatisfy(\.3) ? 0 : 1)
