import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

@Suite("klaxon as an ops tool: --version, log flags, errors in words", .serialized)
struct OpsTests {
    @Test("klaxon --version: the build's line, exit 0")
    func version() async throws {
        let r = try await klaxonAsync(["--version"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "klaxon \(BuildInfo.line)\n")
        #expect(r.stdout.hasPrefix("klaxon \(BuildInfo.version) (revision "))
    }

    @Test("a build in a git clone names its commit in --version, not `revision unknown` (issue 39)")
    func revisionOfAClone() async throws {
        // A tree without git (a tarball, the container's COPY) says unknown, honestly.
        guard FileManager.default.fileExists(atPath: packageRoot.appendingPathComponent(".git").path) else { return }
        let revision = BuildInfo.revision
        #expect(revision.utf8.count == 40 && revision.allSatisfy(\.isHexDigit), "\(revision)")
        let r = try await klaxonAsync(["--version"])
        #expect(r.stdout.contains("(revision \(revision.prefix(12)),"), "\(r.stdout)")
        // A commit of this repository (the build's HEAD; the clone may have moved on since).
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        git.arguments = ["git", "-C", packageRoot.path, "cat-file", "-e", revision + "^{commit}"]
        git.standardError = FileHandle.nullDevice
        let exit = ProcessExit(git)
        try await launchProcess(git)
        _ = await exit.wait(within: .seconds(60))
        guard git.terminationStatus != 127 else { return }  // no git here to ask
        #expect(git.terminationStatus == 0, "\(revision) is not a commit of \(packageRoot.path)")
    }

    @Test("a bad --log-level or KLAXON_LOG_LEVEL is a usage error (64) that says what is wrong")
    func badLevel() async throws {
        let s = try Scratch()
        let cfg = try s.write("klaxon.yaml", "database: k.sqlite\nlisten: 127.0.0.1:0\n")
        let env = try await klaxonAsync(
            ["run", "--config", cfg], in: s.dir, environment: ["KLAXON_LOG_LEVEL": "loud"], limit: .seconds(60))
        #expect(env.status == 64, "\(env.stderr)")
        #expect(env.stderr.contains(#"KLAXON_LOG_LEVEL "loud" is not a log level"#), "\(env.stderr)")
        let flag = try await klaxonAsync(["dispatch", "--log-format", "xml"], in: s.dir)
        #expect(flag.status == 64, "\(flag.stderr)")
        #expect(flag.stderr.contains(#"--log-format "xml" is not a log format (logfmt or json)"#), "\(flag.stderr)")
    }

    @Test("klaxon run on a port another socket listens on: exits non-zero, naming the address in words")
    func portClash() async throws {
        let held = try ClosingServer()
        let s = try Scratch()
        try s.write("rules/r.yaml", "name: r\nkind: threshold\nmetric: m\nabove: 1\n")
        let cfg = try s.write(
            "klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: 127.0.0.1:\(held.port)\n")
        let r = try await klaxonAsync(["run", "--config", cfg], in: s.dir, limit: .seconds(60))
        #expect(!r.killed)
        #expect(r.status != 0)
        #expect(
            r.stderr.contains("cannot listen on 127.0.0.1:\(held.port): address already in use"), "\(r.stderr)")
        #expect(!r.stderr.contains("bind(descriptor"), "\(r.stderr)")
        #expect(!r.stderr.contains("errno"), "\(r.stderr)")
    }

    @Test("klaxon run logs logfmt by default, JSON with --log-format json; the first line names the build")
    func formats() async throws {
        let held = try ClosingServer()
        let s = try Scratch()
        try s.write("rules/r.yaml", "name: r\nkind: threshold\nmetric: m\nabove: 1\n")
        let cfg = try s.write(
            "klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: 127.0.0.1:\(held.port)\n")
        // The port clash ends the daemon at once, after its first lines.
        let logfmt = try await klaxonAsync(["run", "--config", cfg], in: s.dir, limit: .seconds(60))
        let first = try #require(logfmt.errorLines.first)
        #expect(first.hasPrefix("time="), "\(logfmt.stderr)")
        #expect(
            first.hasSuffix(
                #" level=info msg="klaxon starting" built=\#(BuildInfo.date) revision=\#(BuildInfo.revision) swift=\#(BuildInfo.swift) version=\#(BuildInfo.version)"#
            ), "\(first)")
        let json = try await klaxonAsync(
            ["run", "--config", cfg, "--log-format", "json"], in: s.dir, limit: .seconds(60))
        let lines = json.errorLines.filter { $0.hasPrefix("{") }
        #expect(!lines.isEmpty, "\(json.stderr)")
        let objects = try jsonObjects(lines)
        #expect(objects.first?["msg"] as? String == "klaxon starting")
        #expect(objects.first?["version"] as? String == BuildInfo.version)
        #expect(objects.allSatisfy { $0["time"] is String && $0["level"] is String })
        // The same through the environment; the flag wins over it.
        let env = try await klaxonAsync(
            ["run", "--config", cfg], in: s.dir, environment: ["KLAXON_LOG_FORMAT": "json"], limit: .seconds(60))
        #expect(env.errorLines.first?.hasPrefix(#"{"time":"#) == true, "\(env.stderr)")
        let flagWins = try await klaxonAsync(
            ["run", "--config", cfg, "--log-format", "logfmt"], in: s.dir,
            environment: ["KLAXON_LOG_FORMAT": "json"], limit: .seconds(60))
        #expect(flagWins.errorLines.first?.hasPrefix("time=") == true, "\(flagWins.stderr)")
    }
}
