import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct NotifyTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify-test", abstract: "Send a test message to a receiver, for real, and say what happened.")

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file (klaxon.yaml; default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml).", valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @Argument(
        help: "The receiver name.",
        completion: .custom { words, index, prefix in ConfigCompletion.receivers(words, index, prefix) })
    var receiver: String

    func run() async throws {
        do {
            let cfg = try Config.load(path: try requiredConfigPath(config, for: "notify-test"))
            guard let notifier = try DeliveryWiring.notifiers(cfg)[receiver] else {
                throw UserError("no receiver \"\(receiver)\"\(cfg.knownReceivers)")
            }
            let sample = DeliveryWiring.sample(receiver: receiver, now: nowSeconds())
            guard notifier.editsMessages else {
                try await notifier.send(sample)
                print(TerminalText.safe("sent a test message to \(receiver) (key \(sample.key))"))
                return
            }
            // A receiver that edits: the message is posted, then edited in place, as a living
            // message is; both requests' bodies are shown (JSON, no secret: tokens are not in them).
            let id = try await notifier.post(sample)
            print(TerminalText.safe("sent a test message to \(receiver) (key \(sample.key))"))
            print(TerminalText.safe("--- post: message \(id.isEmpty ? "(the answer named none)" : id)"))
            print(try notifier.render(sample))
            guard !id.isEmpty else {
                print("not edited: the platform's answer named no message to edit")
                return
            }
            let edited = DeliveryWiring.sampleEdit(of: sample, now: nowSeconds())
            if let shown = try notifier.renderEdit(edited, messageID: id) {
                print(TerminalText.safe("--- edit: \(shown.request)"))
                print(shown.body)
            }
            try await notifier.edit(edited, messageID: id)
            print(TerminalText.safe("edited it in place (message \(id))"))
        } catch let e as DiagnosticsError {
            printError(e.description)
            throw ExitCode(1)
        } catch let e as ValidationError {
            printError("error: \(e.message)")
            throw ExitCode.validationFailure
        } catch {
            printError("error: \(ErrorWords.describe(error))")
            throw ExitCode(1)
        }
    }
}
