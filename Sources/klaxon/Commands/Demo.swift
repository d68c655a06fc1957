import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonDemo
import KlaxonSources
import KlaxonStore
import Logging

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the daemon offline against local stand-ins for its upstreams, with time compressed.",
        discussion:
            "A river rises through its flood stages and recedes, Delhi's air worsens, an M6.8 earthquake near Tokyo is revised to M7.0, and a saved trip's forecast turns snowy while AirNow forecasts an ozone Action Day for its first day. Alerts go to stdout and to a local chat sink that writes an HTML page; the daemon's status site is served on 127.0.0.1 while it runs, and snapshots of its overview and the river's page are written beside the chat page. A summary of what went where ends the run (with --serve, the daemon and the site stay up until Ctrl-C). Ctrl-C ends it early, with the summary; a second Ctrl-C exits at once."
    )

    @Option(help: "Output format of the stdout receiver: text or json.")
    var format: StdoutNotifier.Format = .text

    @Option(help: "Scenario hours per second.")
    var speed: Double = 1

    @Option(
        help:
            "Where to write the chat page (default: klaxon-demo-chat.html in the run's own folder, a new private folder under the temporary folder)."
    )
    var page: String?

    @Flag(help: "Keep the temporary config, rules and database (their folder is printed).")
    var keep = false

    @Flag(
        help:
            "After the story, keep the daemon and its status site up, in real time, until Ctrl-C (the URL is printed).")
    var serve = false

    @Option(help: "The daemon's HTTP port on 127.0.0.1, for the status site (0: any free port).")
    var port: Int = 0

    @OptionGroup var log: LogOptions

    func validate() throws {
        guard speed >= 0.1 && speed <= 10 else { throw ValidationError("--speed must be between 0.1 and 10") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        try await guarded {
            var options = Demo.Options()
            options.stdout = format
            options.speed = speed * 3_600
            options.keep = keep
            options.serve = serve
            options.port = port
            if let level = log.explicitLevel { options.logLevel = level }
            // Relative to where the command runs (the default alone goes in the run's folder).
            if let page { options.page = URL(fileURLWithPath: page).path }
            let report = try await Demo.run(options)
            printError(Demo.summary(report))
            if keep { printError("  kept:              \(report.folder)") }
            return report.undelivered == 0 ? 0 : 1
        }
    }
}
