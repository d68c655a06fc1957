import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch every configured source (sources: in --config) once and store what is new.",
        discussion:
            "Each source is written in one transaction. A source that fails stores nothing, keeps its cursor and is asked again next time; the others go on. Exit status 1 if any source failed."
    )

    @OptionGroup var store: StoreOptions

    @Option(name: .long, help: "Only this source (repeatable).")
    var source: [String] = []

    @Flag(help: "Fetch even a source whose server asked to wait (HTTP 429 Retry-After).")
    var force = false

    @Option(
        help: ArgumentHelp(
            "Bound the whole fetch, every source included, to this long (like 30s or 2m).",
            discussion:
                "A WebSocket source listens at most until then; a source still waiting for an answer when it runs out fails with \"timed out\" and stores nothing; sources not reached are skipped."
        ))
    var timeout: String?

    @OptionGroup var log: LogOptions

    func run() async throws {
        try await guarded {
            var deadline: ContinuousClock.Instant? = nil
            if let timeout {
                guard let seconds = DurationText.parse(timeout), seconds > 0 else {
                    throw ValidationError("--timeout \"\(timeout)\" is not a duration like 30s")
                }
                deadline = .now + .seconds(seconds)
            }
            guard let config = try store.loadConfig() else {
                throw UserError("fetch needs a config with sources: (--config or \(ConfigLookup.environmentVariable))")
            }
            var sources = config.sources
            if !source.isEmpty {
                for name in source where !sources.contains(where: { $0.source.name == name }) {
                    let names = sources.map(\.source.name).sorted().joined(separator: ", ")
                    throw UserError("no source \"\(name)\" (sources are \(names.isEmpty ? "none" : names))")
                }
                sources = sources.filter { source.contains($0.source.name) }
            }
            if sources.isEmpty { throw UserError("\(store.lookup?.path ?? "the config") defines no sources") }
            return try await store.withStore(config: config, create: true) { db in
                let outcomes = await Fetch.run(
                    sources: sources, store: db, now: nowSeconds(), force: force, future: config.futureBound,
                    deadline: deadline)
                for o in outcomes { print(TerminalText.safe(o.line)) }
                return outcomes.contains { $0.error != nil } ? 1 : 0
            }
        }
    }
}
