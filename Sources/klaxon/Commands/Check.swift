import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Validate rule files (and --config); report every problem.")

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file to validate too (default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml if it exists).",
            valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @OptionGroup var rules: RulesOption

    @Option(
        help: ArgumentHelp(
            "Output format: text or json.",
            discussion:
                "json: {\"ok\", \"rules\", \"files\", \"errors\": [{\"file\", \"line\", \"column\", \"message\"}], \"warnings\": [the same; a warning without a position has only \"message\"]}."
        ))
    var format: OutputFormat = .text

    func run() async throws {
        try await guarded {
            try await Check.command(configPath: resolvedConfigPath(config), rules: rules.rules, json: format == .json)
        }
    }
}
