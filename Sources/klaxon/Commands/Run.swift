import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Logging

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The daemon: poll every source, evaluate as readings arrive, deliver, serve HTTP.",
        discussion:
            "SIGTERM or SIGINT stops it cleanly (exit 0); a notification claimed but not sent is sent after a restart under the same key. --once fetches each source once, evaluates, delivers until the outbox is empty or --deadline, and exits: for cron."
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file (klaxon.yaml; default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml).", valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @Flag(help: "Each source once, evaluate, deliver until the outbox is empty, exit.")
    var once = false

    @Option(help: "With --once: stop delivering after this long.")
    var deadline: String = "5m"

    @OptionGroup var log: LogOptions

    func run() async throws {
        try await guarded {
            let path = try requiredConfigPath(config, for: "run")
            // What the start reads and checks; a reload (SIGHUP, POST /-/reload) reads the same again.
            // Checked as `klaxon check` checks: a bad config does not hide the rules' errors.
            let loader: Daemon.Loader = { try Check.load(configPath: path) }
            let (cfg, ruleList, _) = try loader()
            let logger = Logger(label: "klaxon")
            StartLine.log(to: logger)
            for w in cfg.warnings { logger.warning("\(w.warningDescription)") }  // a secret file anyone may read
            let location = cfg.store ?? .sqlite(path: StoreLocation.defaultPath)
            // A long-running writer of small batches: modest page caches keep the daemon small. On
            // PostgreSQL each duty (a source's polling, the evaluator, the pruner) keeps a connection.
            return try await location.withStore(
                sqliteWriterCacheMiB: 4, sqliteReaderCacheMiB: 1, dutyConnections: cfg.sources.count + 2, logger: logger
            ) { store in
                for line in try await WaterContext.missingCategories(rules: ruleList, store: store) {
                    logger.warning("\(line)")
                }
                let daemon = Daemon(config: cfg, store: store, rules: ruleList, logger: logger, loader: loader)
                if once {
                    guard let d = DurationText.parse(deadline) else {
                        throw UserError("--deadline \"\(deadline)\" is not a duration")
                    }
                    let r = try await daemon.once(deadline: d)
                    for o in r.outcomes { printError(o.line) }
                    var line =
                        "run --once: \(r.evaluation.newReadings) new readings, \(r.evaluation.transitionCount) transitions"
                    if let p = r.delivery { line += ", \(p.sent) sent, \(p.dead) dead, \(p.retried) retried" }
                    printError(line)
                    return r.outcomes.contains { $0.error != nil } ? 1 : 0
                } else {
                    try await daemon.run { port in
                        // Once, through the logger (Hummingbird's own line is below its level: KlaxonHTTP).
                        logger.notice("listening", metadata: ["address": "\(cfg.listen.host):\(port)"])
                    }
                    return 0
                }
            }
        }
    }
}
