import Foundation
import KlaxonCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SplitMix64: a tiny, fast, seedable generator, so the same seed always writes the same data.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}

/// Collects bytes in a buffer and writes it to a file descriptor in big chunks.
struct ChunkedWriter {
    /// Small, so generating data barely raises this driver's own peak RSS (see `Child`).
    static let chunkSize = 1 << 20

    let fd: Int32
    let path: String
    var buffer: [UInt8] = []

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
        buffer.reserveCapacity(Self.chunkSize + 4096)
    }

    mutating func append(_ bytes: [UInt8]) { buffer.append(contentsOf: bytes) }

    mutating func append(_ byte: UInt8) { buffer.append(byte) }

    /// Appends a non-negative amount of hundredths as `12.34`.
    mutating func appendHundredths(_ value: Int) {
        let whole = value / 100
        let cents = value % 100
        var divisor = 1
        while divisor * 10 <= whole { divisor *= 10 }
        while divisor > 0 {
            buffer.append(UInt8(48 + whole / divisor % 10))
            divisor /= 10
        }
        buffer.append(0x2E)  // .
        buffer.append(UInt8(48 + cents / 10))
        buffer.append(UInt8(48 + cents % 10))
    }

    /// Writes out the buffer once it holds a chunk. Call it after each line (lines must be under 4 KiB),
    /// so the buffer never outgrows its first allocation.
    mutating func flushIfFull() throws {
        if buffer.count >= Self.chunkSize { try flush() }
    }

    /// Writes out everything buffered.
    mutating func flush() throws {
        try buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BenchError("\(path): cannot write: \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Writes the benchmark's inputs: readings CSV files and rule folders.
enum DataGen {
    /// The first reading's time: 2025-01-01T00:00:00Z.
    static let start: Int64 = 1_735_689_600
    /// Readings every 15 minutes.
    static let step: Int64 = 900

    /// The station id for index `i`: `G000` … `G099`.
    static func station(_ i: Int) -> String {
        let digits = String(i)
        return "G" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }

    /// Writes `stations × steps` river gage heights as CSV (`station,metric,time,value`), ordered by time
    /// and then station, as a live feed would deliver them. Each gauge follows a slow, mean-reverting walk
    /// around 9 ft with storm surges now and then, clamped to 5–20 ft, so flood stages are reached a few
    /// times a year per gauge. Written to a temporary name and renamed, so an interrupted run leaves no
    /// half-written file behind.
    static func writeReadings(path: String, stations: Int, steps: Int, seed: UInt64) throws {
        let tmp = path + ".partial"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw BenchError("\(tmp): cannot create: \(String(cString: strerror(errno)))") }
        var out = ChunkedWriter(fd: fd, path: tmp)
        do {
            defer { close(fd) }
            var rng = SplitMix64(seed: seed)
            let prefixes = (0..<stations).map { Array("\(station($0)),gage_height,".utf8) }
            // Per gauge: its base level, the slow walk, the storm surge and its target.
            let base = (0..<stations).map { _ in 8.0 + 2.0 * rng.unit() }
            var walk = [Double](repeating: 0, count: stations)
            var surge = [Double](repeating: 0, count: stations)
            var surgeTarget = [Double](repeating: 0, count: stations)
            var surgeRise = [Int](repeating: 0, count: stations)
            out.append(Array("station,metric,time,value\n".utf8))
            for k in 0..<steps {
                let time = Array("\(Timestamp.format(start + Int64(k) * step)),".utf8)
                for s in 0..<stations {
                    // Mean-reverting walk: stationary spread about ±1 ft.
                    let noise = rng.unit() + rng.unit() + rng.unit() - 1.5
                    walk[s] += -0.002 * walk[s] + 0.08 * noise
                    // A storm roughly every three weeks: rises over 6–18 h, then recedes over days.
                    if surgeRise[s] == 0 && rng.unit() < 1.0 / 2000 {
                        surgeTarget[s] = 2 + 9 * rng.unit()
                        surgeRise[s] = 24 + Int(48 * rng.unit())
                    }
                    if surgeRise[s] > 0 {
                        surge[s] += (surgeTarget[s] - surge[s]) * 0.08
                        surgeRise[s] -= 1
                    } else {
                        surge[s] *= 0.992
                    }
                    let value = min(20, max(5, base[s] + walk[s] + surge[s]))
                    out.append(prefixes[s])
                    out.append(time)
                    out.appendHundredths(Int((value * 100).rounded()))
                    out.append(0x0A)
                    try out.flushIfFull()
                }
            }
            try out.flush()
        } catch {
            unlink(tmp)
            throw error
        }
        guard rename(tmp, path) == 0 else {
            throw BenchError("\(path): cannot rename from \(tmp): \(String(cString: strerror(errno)))")
        }
    }

    /// The dry-run rules: flood stages (levels with a deadband), sustained high water (threshold held
    /// for an hour) and a silent gauge (stale after two hours), all on `gage_height` for every station.
    static let dryRunRulesYAML = """
        rules:
          - name: bench-flood-stages
            kind: levels
            metric: gage_height
            levels:
              - {name: minor, at: 12}
              - {name: moderate, at: 14}
              - {name: major, at: 17}
            deadband: 0.3
            severity: warning
            labels: {team: bench}
            message: >-
              {{#firing}}{{station}} reached {{level}} stage: {{value}} at {{at}}.{{/firing}}
              {{#changed}}{{station}}: {{from_level}} → {{level}} stage, {{value}} at {{at}}.{{/changed}}
              {{#resolved}}{{station}} is back below flood stages: {{value}} at {{at}}.{{/resolved}}
          - name: bench-high-water
            kind: threshold
            metric: gage_height
            above: 15
            clear: 14.5
            for: 1h
            severity: critical
          - name: bench-gauge-silent
            kind: stale
            metric: gage_height
            after: 2h
            severity: info

        """

    /// Rule file `i` of the `check` set: threshold, levels and stale rules in turn, on a few metrics,
    /// some with a station list, labels and a message template.
    static func checkRuleYAML(_ i: Int) -> String {
        let metrics = ["gage_height", "discharge", "water_temperature", "pm25", "wind_speed"]
        let metric = metrics[i % metrics.count]
        let name = "bench-rule-\(i)"
        var lines: [String] = ["# Generated by klaxon-bench: rule \(i) of the check set.", "name: \(name)"]
        switch i % 3 {
        case 0:
            lines += [
                "kind: threshold", "metric: \(metric)", "above: \(10 + i % 7)", "clear: \(9 + i % 7).5",
                "for: \(15 * (1 + i % 4))m", "severity: critical",
            ]
        case 1:
            lines += [
                "kind: levels", "metric: \(metric)", "levels:", "  - {name: low, at: \(i % 5 + 1)}",
                "  - {name: high, at: \(i % 5 + 3)}", "  - {name: extreme, at: \(i % 5 + 6)}",
                "deadband: 0.25", "min_dwell: 15m", "severity: warning",
            ]
        default:
            lines += ["kind: stale", "metric: \(metric)", "after: \(1 + i % 6)h", "severity: info"]
        }
        if i % 2 == 0 { lines.append("stations: [\(station(i % 100)), \(station((i + 1) % 100))]") }
        if i % 4 == 0 { lines.append("labels: {team: bench, shard: \"\(i % 8)\"}") }
        if i % 5 == 0 {
            lines += [
                "message: >-",
                "  {{#firing}}\(name): {{station}} {{metric}} is {{value}}.{{/firing}}",
                "  {{#resolved}}\(name): {{station}} {{metric}} is back to normal.{{/resolved}}",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes `count` rule files into `dir` (replacing the folder's `*.yaml`).
    static func writeCheckRules(dir: String, count: Int) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for name in try fm.contentsOfDirectory(atPath: dir) where name.hasSuffix(".yaml") {
            try fm.removeItem(atPath: (dir as NSString).appendingPathComponent(name))
        }
        for i in 0..<count {
            let path = (dir as NSString).appendingPathComponent("rule-\(String(format: "%03d", i)).yaml")
            try checkRuleYAML(i).write(toFile: path, atomically: false, encoding: .utf8)
        }
    }

    /// Writes the dry-run rules as `dir/bench.yaml`.
    static func writeDryRunRules(dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try dryRunRulesYAML.write(
            toFile: (dir as NSString).appendingPathComponent("bench.yaml"), atomically: false, encoding: .utf8)
    }
}
