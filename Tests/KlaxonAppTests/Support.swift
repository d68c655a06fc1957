import Foundation
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
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
}

/// Runs `klaxon` with arguments in a working directory and collects its output.
func klaxon(_ arguments: [String], in dir: URL? = nil, environment: [String: String] = [:]) throws -> Run {
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
    FileManager.default.createFile(atPath: outURL.path, contents: nil)
    FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
    }
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    try out.close()
    try err.close()
    let outData = try Data(contentsOf: outURL)
    let errData = try Data(contentsOf: errURL)
    return Run(
        status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
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

/// `klaxon(_:in:)` for async tests: the wait for the child happens on a Dispatch thread, not on one
/// of Swift's cooperative threads. On a 2-core machine two tests blocking those threads would starve
/// the in-process servers (HTTP sink, SMTP) that the child is talking to.
func klaxonAsync(_ arguments: [String], in dir: URL? = nil, environment: [String: String] = [:]) async throws -> Run {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try klaxon(arguments, in: dir, environment: environment) })
        }
    }
}
