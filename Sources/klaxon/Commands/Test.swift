import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct TestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run rule unit tests (series in; firing alerts, transitions and what is sent out).",
        discussion:
            "An expectation's sent: replays the case through a scratch store and the dispatcher, so it checks what a receiver would get (folding, group timing, resolves), not only what fires."
    )

    @Argument(help: "Test files or folders.", completion: .file(extensions: ["yaml", "yml"]))
    var paths: [String]

    @Option(
        help: ArgumentHelp(
            "Output format: text or json.",
            discussion:
                "json: {\"passed\", \"failed\", \"tests\": [{\"file\", \"name\", \"passed\", \"seconds\", \"failure\"}]}."
        ))
    var format: OutputFormat = .text

    @Option(
        help: ArgumentHelp(
            "Also write the results as JUnit XML to this file (as `promtool test rules --junit` does).",
            valueName: "file"),
        completion: .file(extensions: ["xml"]))
    var junit: String?

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give at least one test file or folder") }
    }

    struct Case: Encodable {
        var file: String
        var name: String
        var passed: Bool
        var seconds: Double
        var failure: String?
    }

    struct Report: Encodable {
        var passed: Int
        var failed: Int
        var tests: [Case]
    }

    func run() async throws {
        try await guarded {
            let outcome = try await RuleTests.run(paths: paths)
            if let junit {
                let xml = JUnitReport.xml(outcome)
                do {
                    try await offPool { try Data(xml.utf8).write(to: URL(fileURLWithPath: junit), options: .atomic) }
                } catch {
                    throw UserError("--junit \(junit): cannot write: \(error.localizedDescription)")
                }
            }
            switch format {
            case .json:
                try printJSON(
                    Report(
                        passed: outcome.passed, failed: outcome.failed,
                        tests: outcome.cases.map {
                            Case(
                                file: $0.file, name: $0.name, passed: $0.failure == nil,
                                seconds: ($0.seconds * 1000).rounded() / 1000, failure: $0.failure)
                        }))
            case .text:
                for f in outcome.failures { print(f.description) }
                print(outcome.summary)
            }
            return outcome.failed > 0 ? 1 : 0
        }
    }
}
