// `klaxon-bench`: measures a release build of `klaxon` against its performance targets by running the
// real binary as a child process on generated data.
//
//     klaxon-bench [--klaxon PATH] [--data DIR] [--only dry-run,ingest,check] [--runs N] [--check-runs N]
//
// - `dry-run`: 100 gauges × a year of 15-minute readings (3,504,000) replayed from CSV through three
//   rules, JSON output to /dev/null. Target: under 3 s wall and 100 MiB peak RSS.
// - `ingest`: 1,000,000 readings from CSV into a fresh SQLite file. Target: at least 500k readings/s.
// - `check`: 100 rule files of mixed kinds, median of `--check-runs` runs. Target: under 100 ms wall.
//
// Each benchmark prints one line with its verdict; a Markdown table for the README comes last. Readings
// files are generated into `--data` (default `bench-data/`) only when missing; rule folders are
// rewritten every run (they are tiny). Exit status: 0 when every target is met, 1 when one is missed,
// 2 on an error.
import Foundation
import KlaxonCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Command-line options.
struct Options {
    static let benchmarks = ["dry-run", "ingest", "check"]

    var klaxon: String
    var data = "bench-data"
    var only = Options.benchmarks
    var runs = 1
    var checkRuns = 5

    static let usage = """
        usage: klaxon-bench [--klaxon PATH] [--data DIR] [--only dry-run,ingest,check] [--runs N] [--check-runs N]

          --klaxon PATH     the klaxon binary (default: next to this executable)
          --data DIR        where generated data goes (default: bench-data)
          --only LIST       which benchmarks to run, comma-separated (default: all)
          --runs N          runs of dry-run and ingest; the median is reported (default: 1)
          --check-runs N    runs of check; the median is reported (default: 5)
        """

    /// Parses `arguments` (without the program name).
    init(_ arguments: [String]) throws {
        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        klaxon = ((executable as NSString).deletingLastPathComponent as NSString).appendingPathComponent("klaxon")
        var rest = arguments[...]
        func value(_ option: String) throws -> String {
            guard let v = rest.popFirst() else { throw BenchError("\(option) needs a value\n\(Self.usage)") }
            return v
        }
        func count(_ option: String) throws -> Int {
            let text = try value(option)
            guard let n = Int(text), n >= 1 else { throw BenchError("\(option): \"\(text)\" is not a positive count") }
            return n
        }
        while let arg = rest.popFirst() {
            switch arg {
            case "--klaxon": klaxon = try value(arg)
            case "--data": data = try value(arg)
            case "--runs": runs = try count(arg)
            case "--check-runs": checkRuns = try count(arg)
            case "--only":
                only = try value(arg).split(separator: ",").map(String.init)
                for name in only where !Self.benchmarks.contains(name) {
                    throw BenchError(
                        "--only: unknown benchmark \"\(name)\" (benchmarks are \(Self.benchmarks.joined(separator: ", ")))"
                    )
                }
            case "-h", "--help":
                print(Self.usage)
                exit(0)
            default: throw BenchError("unknown argument \"\(arg)\"\n\(Self.usage)")
            }
        }
    }
}

/// One benchmark's outcome: its console line and its table row.
struct Outcome {
    var command: String
    var workload: String
    var result: String
    var target: String
    var pass: Bool

    var verdict: String { pass ? "PASS" : "MISS" }
}

/// Runs the benchmarks.
struct Bench {
    let options: Options
    let fm = FileManager.default

    /// A path inside the data folder.
    func data(_ name: String) -> String { (options.data as NSString).appendingPathComponent(name) }

    /// Generates a readings file unless it exists; returns its path.
    func readings(_ name: String, stations: Int, steps: Int, seed: UInt64) throws -> String {
        let path = data(name)
        if fm.fileExists(atPath: path) { return path }
        note("generating \(path) (\(stations * steps) readings)…")
        let clock = ContinuousClock()
        let start = clock.now
        try DataGen.writeReadings(path: path, stations: stations, steps: steps, seed: seed)
        let size = (try? fm.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        note("  \(mib(size)) in \(fixed(Child.seconds(start.duration(to: clock.now)), 2)) s")
        return path
    }

    /// Runs klaxon `runs` times; fails unless every run exits 0.
    func klaxon(_ arguments: [String], runs: Int, stdout: String = "/dev/null") throws -> [ChildRun] {
        try (0..<runs).map { _ in
            let run = try Child.run([options.klaxon] + arguments, stdoutPath: stdout, stderrPath: data("klaxon.stderr"))
            guard run.status == 0 else {
                throw BenchError(
                    "klaxon \(arguments.joined(separator: " ")) exited with status \(run.status):\n\(tail(run.stderr))")
            }
            return run
        }
    }

    /// The dry-run input: 100 gauges × 35,040 readings (a year at 15 minutes).
    func dryRunReadings() throws -> String {
        try readings("dryrun-100x35040.csv", stations: 100, steps: 35_040, seed: 2025)
    }

    /// The ingest input: 100 gauges × 10,000 readings.
    func ingestReadings() throws -> String {
        try readings("ingest-100x10000.csv", stations: 100, steps: 10_000, seed: 1)
    }

    /// `klaxon dry-run` over a year of readings from 100 gauges.
    func dryRun() throws -> Outcome {
        let total = 100 * 35_040
        let csv = try dryRunReadings()
        let rules = data("rules-dryrun")
        try DataGen.writeDryRunRules(dir: rules)
        let runs = try klaxon(
            ["dry-run", "--rules", rules, "--readings", csv, "--format", "json"], runs: options.runs)
        let replayed = number(before: " readings replayed", in: runs[0].stderr)
        guard replayed == total else {
            throw BenchError(
                "dry-run replayed \(replayed.map(String.init) ?? "?") readings, expected \(total):\n\(tail(runs[0].stderr))"
            )
        }
        let transitions = number(before: " transitions", in: runs[0].stderr).map(String.init) ?? "?"
        let wall = median(runs.map(\.seconds))
        let cpu = median(runs.map(\.cpuSeconds))
        let peak = runs.map(\.peakRSS).max()!
        let rss = peakText(peak)
        let pass = wall < 3 && peak < 100 << 20
        print(
            "dry-run \(total) readings: \(fixed(wall, 2)) s wall\(medianNote) (\(fixed(cpu, 2)) s CPU), \(rss) (target < 3 s, < 100 MiB): \(pass ? "PASS" : "MISS")"
        )
        return Outcome(
            command: "`klaxon dry-run --format json`",
            workload:
                "100 gauges × 1 year of 15-min readings (\(grouped(total))), 3 rules → \(transitions) transitions",
            result: "\(fixed(wall, 2)) s (\(fixed(cpu, 2)) s CPU), \(rss)", target: "< 3 s, < 100 MiB", pass: pass)
    }

    /// `klaxon ingest` of a million readings into a fresh SQLite file.
    func ingest() throws -> Outcome {
        let total = 100 * 10_000
        let csv = try ingestReadings()
        let db = data("ingest.sqlite")
        let runs = try (0..<options.runs).map { _ in
            for suffix in ["", "-wal", "-shm"] { try? fm.removeItem(atPath: db + suffix) }
            let run = try klaxon(["ingest", "--db", db, csv], runs: 1)[0]
            let inserted = number(before: " new", in: run.stderr)
            guard inserted == total else {
                throw BenchError(
                    "ingest stored \(inserted.map(String.init) ?? "?") new readings, expected \(total):\n\(tail(run.stderr))"
                )
            }
            return run
        }
        let wall = median(runs.map(\.seconds))
        let cpu = median(runs.map(\.cpuSeconds))
        let rate = Double(total) / wall
        let peak = runs.map(\.peakRSS).max()!
        let rss = peakText(peak)
        let pass = rate >= 500_000
        print(
            "ingest \(total) readings: \(fixed(wall, 2)) s wall\(medianNote) (\(fixed(cpu, 2)) s CPU), \(thousands(rate)) readings/s, \(rss) (target ≥ 500k readings/s): \(pass ? "PASS" : "MISS")"
        )
        return Outcome(
            command: "`klaxon ingest`", workload: "\(grouped(total)) readings from CSV into a fresh SQLite file",
            result: "\(fixed(wall, 2)) s (\(fixed(cpu, 2)) s CPU) = \(thousands(rate)) readings/s, \(rss)",
            target: "≥ 500k readings/s", pass: pass)
    }

    /// `klaxon check` of 100 rule files.
    func check() throws -> Outcome {
        let files = 100
        let rules = data("rules-check")
        try DataGen.writeCheckRules(dir: rules, count: files)
        let out = data("check.stdout")
        let runs = try klaxon(["check", "--rules", rules], runs: options.checkRuns, stdout: out)
        let said = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        guard said.contains("ok: \(files) rules in \(files) files") else {
            throw BenchError("check did not accept the \(files) rules: \(said)\(tail(runs.last?.stderr ?? ""))")
        }
        let times = runs.map(\.seconds)
        let wall = median(times)
        let cpu = median(runs.map(\.cpuSeconds))
        let peak = runs.map(\.peakRSS).max()!
        let rss = peakText(peak)
        let pass = wall < 0.1
        let spread = runs.count > 1 ? " (median of \(runs.count); \(ms(times.min()!))–\(ms(times.max()!)))" : ""
        print(
            "check \(files) rule files: \(ms(wall)) wall\(spread) (\(ms(cpu)) CPU), \(rss) (target < 100 ms): \(pass ? "PASS" : "MISS")"
        )
        return Outcome(
            command: "`klaxon check`", workload: "\(files) rule files (threshold, levels, stale)",
            result: "\(ms(wall)) (median of \(runs.count); \(ms(cpu)) CPU), \(rss)", target: "< 100 ms", pass: pass)
    }

    /// A child's peak RSS as text. When it is no higher than the floor (this driver's own peak, which
    /// the kernel folds into a spawned child's figure, see `Child`), the true peak is only known to be
    /// at most that, and the text says so.
    func peakText(_ peak: Int) -> String {
        guard let floor = Child.floor(scratch: data("klaxon.stderr")), peak <= floor + (512 << 10) else {
            return "\(mib(peak)) peak RSS"
        }
        return "≤ \(mib(peak)) peak RSS (the driver's floor)"
    }

    var medianNote: String { options.runs > 1 ? " (median of \(options.runs))" : "" }

    /// Runs the chosen benchmarks and prints the table; returns the exit status.
    func run() throws -> Int32 {
        guard fm.isExecutableFile(atPath: options.klaxon) else {
            throw BenchError("\(options.klaxon): no klaxon binary there (build it, or pass --klaxon PATH)")
        }
        try fm.createDirectory(atPath: options.data, withIntermediateDirectories: true)
        note("klaxon: \(options.klaxon)")
        note("machine: \(machine())")
        // All inputs first, so generating them cannot move the RSS floor between measurements.
        if options.only.contains("dry-run") { _ = try dryRunReadings() }
        if options.only.contains("ingest") { _ = try ingestReadings() }
        let floor = Child.floor(scratch: data("klaxon.stderr"))
        note("peak RSS floor (this driver spawning /bin/true): \(floor.map(mib) ?? "?")")
        if let load = loadAverage(), load > 0.5 {
            note(
                "note: load average \(fixed(load, 2)) on \(ProcessInfo.processInfo.activeProcessorCount) cores: other work is running, so wall times will be noisy (CPU times less so)"
            )
        }

        var outcomes: [Outcome] = []
        for name in Options.benchmarks where options.only.contains(name) {
            switch name {
            case "dry-run": outcomes.append(try dryRun())
            case "ingest": outcomes.append(try ingest())
            default: outcomes.append(try check())
            }
        }

        print("")
        print("Release build, \(machine()), \(today()):")
        print("")
        print("| Command | Workload | Measured | Target | |")
        print("|---|---|---|---|---|")
        for o in outcomes {
            print("| \(o.command) | \(o.workload) | \(o.result) | \(o.target) | \(o.verdict) |")
        }
        return outcomes.allSatisfy(\.pass) ? 0 : 1
    }
}

// MARK: - Formatting

/// Progress and context, to standard error so standard output is just the results.
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func fixed(_ v: Double, _ places: Int) -> String { String(format: "%.\(places)f", v) }

/// Bytes as `38.2 MiB`.
func mib(_ bytes: Int) -> String { "\(fixed(Double(bytes) / 1_048_576, 1)) MiB" }

func ms(_ seconds: Double) -> String { "\(fixed(seconds * 1000, 1)) ms" }

/// A rate as `654k`.
func thousands(_ v: Double) -> String { "\(Int((v / 1000).rounded()))k" }

/// `3504000` as `3,504,000`.
func grouped(_ n: Int) -> String {
    var digits = Array(String(n))
    var i = digits.count - 3
    while i > 0 {
        digits.insert(",", at: i)
        i -= 3
    }
    return String(digits)
}

/// The last few lines of a child's standard error, for error messages.
func tail(_ text: String, lines: Int = 12) -> String {
    let all = text.split(separator: "\n", omittingEmptySubsequences: false)
    let kept = all.suffix(lines).joined(separator: "\n")
    return all.count > lines ? "… (\(all.count - lines) lines before)\n" + kept : kept
}

/// The median (the mean of the middle two for an even count).
func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// The integer just before `suffix` in `text` (as in `3504000 readings replayed`).
func number(before suffix: String, in text: String) -> Int? {
    guard let range = text.range(of: suffix) else { return nil }
    let digits = text[..<range.lowerBound].reversed().prefix { $0.isNumber }
    return Int(String(digits.reversed()))
}

/// OS, core count and CPU model.
func machine() -> String {
    var parts: [String] = []
    #if os(Linux)
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        parts.append("Linux \(release)")
        if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
            let colon = line.firstIndex(of: ":")
        {
            parts.append(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
    #else
        parts.append(ProcessInfo.processInfo.operatingSystemVersionString)
    #endif
    parts.append("\(ProcessInfo.processInfo.activeProcessorCount) cores")
    return parts.joined(separator: ", ")
}

/// The one-minute load average (Linux), or nil.
func loadAverage() -> Double? {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
    return text.split(separator: " ").first.flatMap { Double($0) }
}

func today() -> String { String(Timestamp.format(Int64(Date().timeIntervalSince1970)).prefix(10)) }

// MARK: - Entry point

do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    exit(try Bench(options: options).run())
} catch {
    note("klaxon-bench: \(error)")
    exit(2)
}
