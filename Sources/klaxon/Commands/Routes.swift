import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore

/// `klaxon routes show|test`: the routing tree of the config, and where an alert with given labels
/// would go, like `amtool config routes show|test`. The decisions are `Routing`'s own (the code the
/// evaluator and dispatcher use), never a copy.
struct RoutesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "routes", abstract: "Show the routing tree, or test where an alert would go.",
        subcommands: [Show.self, Test.self])

    /// One route as printed and as JSON.
    struct RouteView: Encodable {
        /// 1-based position in `routes:`; nil for the defaults (default_receiver).
        var index: Int?
        var matchers: [String]
        var receivers: [String]
        var group_by: [String]
        var group_wait: String
        var group_interval: String
        var repeat_interval: String?
        var send_resolved: Bool
        var `continue`: Bool
        var quiet_hours: QuietView?
        var escalate_after: String?
        var escalate_to: String?
        var notify_max_age: String

        init(_ r: Route, index: Int?, receivers: [String]? = nil) {
            self.index = index
            matchers = r.matchers.map(\.description)
            self.receivers = receivers ?? r.receivers
            group_by = r.groupBy
            group_wait = DurationText.format(r.groupWait)
            group_interval = DurationText.format(r.groupInterval)
            repeat_interval = r.repeatInterval.map(DurationText.format)
            send_resolved = r.sendResolved
            self.continue = r.continue
            quiet_hours = r.quietHours.map(QuietView.init)
            escalate_after = r.escalateAfter.map(DurationText.format)
            escalate_to = r.escalateTo
            notify_max_age = DurationText.format(r.notifyMaxAge)
        }

        var text: String {
            var parts = [
                index.map { "#\($0) {\(matchers.joined(separator: ", "))}" } ?? "default",
                "receivers: \(receivers.isEmpty ? "(none)" : receivers.joined(separator: ", "))",
                "group_by: [\(group_by.joined(separator: ", "))]", "group_wait: \(group_wait)",
                "group_interval: \(group_interval)",
            ]
            if let repeat_interval { parts.append("repeat_interval: \(repeat_interval)") }
            if !send_resolved { parts.append("send_resolved: false") }
            if self.continue { parts.append("continue: true") }
            if let quiet_hours { parts.append("quiet_hours: \(quiet_hours.text)") }
            if let escalate_after { parts.append("escalate_after: \(escalate_after) → \(escalate_to ?? "?")") }
            return parts.joined(separator: "  ")
        }
    }

    struct QuietView: Encodable {
        var from: String
        var to: String
        var timezone: String
        var days: [String]
        var policy: String
        var bypass_severity: String?

        init(_ q: QuietHours) {
            func hhmm(_ m: Int) -> String { String(format: "%02d:%02d", m / 60, m % 60) }
            from = hhmm(q.from)
            to = hhmm(q.to)
            timezone = q.timeZone.identifier
            days = QuietHours.Weekday.allCases.filter { q.days.contains($0) }.map(\.rawValue)
            policy = q.policy.rawValue
            bypass_severity = q.bypassSeverity?.rawValue
        }

        var text: String {
            var t = "\(from)–\(to) \(timezone) (\(policy)"
            if days.count < 7 { t += ", \(days.joined(separator: " "))" }
            if let bypass_severity { t += ", \(bypass_severity) bypasses" }
            return t + ")"
        }
    }

    static func config(_ flag: String?) throws -> Config {
        try Config.load(path: try requiredConfigPath(flag, for: "routes"))
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the routing tree: each route's matchers, receivers and timing, and the default.",
            discussion:
                "Routes are tried in order; the first that matches takes the alert, and one with continue: true lets later routes match too. An alert no route takes goes to default_receiver. A rule's notify: receivers come on top, with the timing of the first matching route. With --format json: {\"routes\": [...], \"default\": {...}} with the fields index, matchers, receivers, group_by, group_wait, group_interval, repeat_interval, send_resolved, continue, quiet_hours, escalate_after, escalate_to, notify_max_age."
        )

        @Option(
            name: .long, help: ArgumentHelp("Config file (klaxon.yaml).", valueName: "file"),
            completion: .file(extensions: ["yaml", "yml"]))
        var config: String?

        @Option(help: "Output format: text or json.")
        var format: OutputFormat = .text

        struct Tree: Encodable {
            var routes: [RouteView]
            var `default`: RouteView
        }

        func run() throws {
            try guarded {
                let cfg = try RoutesCommand.config(config)
                let routing = cfg.routing
                let tree = Tree(
                    routes: routing.routes.enumerated().map { RouteView($1, index: $0 + 1) },
                    default: RouteView(
                        routing.defaults, index: nil, receivers: routing.defaultReceiver.map { [$0] } ?? []))
                switch format {
                case .json: try printJSON(tree)
                case .text:
                    print(TerminalText.safe("└── \(tree.default.text)"))
                    for (i, r) in tree.routes.enumerated() {
                        print(TerminalText.safe("    \(i == tree.routes.count - 1 ? "└──" : "├──") \(r.text)"))
                    }
                }
                return 0
            }
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Which receivers an alert with these labels reaches, in which group; quiet hours and silences now.",
            discussion: """
                Labels are LABEL=VALUE: rule (or alertname), station, metric, severity (default: the named rule's, else warning), level \
                and any label a rule sets. A named rule's notify: receivers count, as they do for real. The first \
                line lists the receivers, comma-separated, as `amtool config routes test` prints them; exit \
                status 1 when none. Silences are read from the database when there is one (never created). \
                With --format json: {"labels", "receivers": [{"receiver", "route", "group_key", "group_wait", \
                "group_interval", "repeat_interval", "quiet_now", "quiet_until", "quiet_policy"}], \
                "silenced_by": [...]}.
                """)

        @Option(
            name: .long, help: ArgumentHelp("Config file (klaxon.yaml).", valueName: "file"),
            completion: .file(extensions: ["yaml", "yml"]))
        var config: String?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The database to read silences from (default: database: of the config).", valueName: "path-or-url"),
            completion: .file(extensions: ["sqlite", "db"]))
        var db: String?

        @Option(help: "Output format: text or json.")
        var format: OutputFormat = .text

        @Option(help: "Decide as of this time (ISO 8601; default: now).")
        var now: String?

        @Argument(
            help: "Labels: LABEL=VALUE.",
            completion: .custom { words, index, prefix in ConfigCompletion.labels(words, index, prefix) })
        var labels: [String] = []

        struct Delivery: Encodable {
            var receiver: String
            /// 1-based route, nil for the defaults.
            var route: Int?
            var group_key: String
            var group_wait: String
            var group_interval: String
            var repeat_interval: String?
            var quiet_now: Bool
            var quiet_until: String?
            var quiet_policy: String?
        }

        struct Answer: Encodable {
            var labels: [String: String]
            var receivers: [Delivery]
            var silenced_by: [String]
            /// Whether silences were read (false without a database).
            var silences_checked: Bool
        }

        /// The alert these labels describe. A rule the config defines gives what its alerts carry (its
        /// severity and labels) unless a label given says otherwise: `rule=X` alone is X's real alert.
        func transition(_ pairs: [String: String], at: Int64, rule defined: Rule? = nil) throws -> Transition {
            var rest = (defined?.labels ?? [:]).merging(pairs) { _, given in given }
            let rule = rest.removeValue(forKey: "rule") ?? rest.removeValue(forKey: "alertname") ?? ""
            rest.removeValue(forKey: "alertname")
            let severityText =
                rest.removeValue(forKey: "severity") ?? defined?.severity.rawValue ?? Severity.warning.rawValue
            guard let severity = Severity(rawValue: severityText) else {
                throw ValidationError(
                    "severity=\(severityText): must be \(Severity.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return Transition(
                rule: rule, kind: "test", station: rest.removeValue(forKey: "station") ?? "",
                metric: rest.removeValue(forKey: "metric") ?? "", state: .firing,
                level: rest.removeValue(forKey: "level"), at: at, value: nil, severity: severity, labels: rest,
                summary: "", explanation: "")
        }

        func run() async throws {
            try await guarded {
                var pairs: [String: String] = [:]
                for text in labels {
                    guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
                        throw ValidationError("\"\(TerminalText.safe(text))\" is not LABEL=VALUE")
                    }
                    pairs[String(text[..<eq])] = String(text[text.index(after: eq)...])
                }
                let at = try parseTime(now, option: "--now") ?? nowSeconds()
                let cfg = try RoutesCommand.config(config)
                // A named rule's own severity, labels and receivers, as the evaluator gives its alerts.
                let named = pairs["rule"] ?? pairs["alertname"] ?? ""
                let defined =
                    named.isEmpty ? nil : (try? loadRules(cfg.rules ?? ["Rules"]))?.first { $0.name == named }
                let t = try transition(pairs, at: at, rule: defined)
                let notify = defined?.notify ?? []
                let plan = cfg.routing.plan(for: t, notify: notify)
                let deliveries = plan.map { p -> Delivery in
                    let route = cfg.routing.route(p.route)
                    let quiet = route.quietHours.map { $0.mutes(t.severity, at: at) } ?? false
                    return Delivery(
                        receiver: p.receiver, route: p.route.map { $0 + 1 }, group_key: p.groupKey,
                        group_wait: DurationText.format(p.groupWait),
                        group_interval: DurationText.format(p.groupInterval),
                        repeat_interval: route.repeatInterval.map(DurationText.format), quiet_now: quiet,
                        quiet_until: quiet ? route.quietHours?.end(of: at).map(Timestamp.format) : nil,
                        quiet_policy: quiet ? route.quietHours?.policy.rawValue : nil)
                }
                // Silences: only from a database that exists.
                var silencedBy: [String] = []
                var checked = false
                let location =
                    try db.map { try StoreLocation.parse($0, environment: ProcessInfo.processInfo.environment) }
                    ?? cfg.store ?? .sqlite(path: StoreLocation.defaultPath)
                if location.sqlitePath.map({ FileManager.default.fileExists(atPath: $0) }) ?? true {
                    do {
                        silencedBy = try await location.withStore(readOnly: true, create: false, logger: storeLogger) {
                            store in
                            try await store.activeSilences(now: at).filter { $0.mutes(t.matchLabels, at: at) }.map(\.id)
                        }
                        checked = true
                    } catch {
                        printError(TerminalText.safe("warning: silences not checked: \(error)"))
                    }
                }
                let answer = Answer(
                    labels: t.matchLabels, receivers: deliveries, silenced_by: silencedBy, silences_checked: checked)
                switch format {
                case .json: try printJSON(answer)
                case .text:
                    print(TerminalText.safe(deliveries.map(\.receiver).joined(separator: ",")))
                    for d in deliveries {
                        var line =
                            "  \(d.receiver): \(d.route.map { "route #\($0)" } ?? "default")  group {\(d.group_key)}  group_wait: \(d.group_wait)  group_interval: \(d.group_interval)"
                        if let r = d.repeat_interval { line += "  repeat_interval: \(r)" }
                        if d.quiet_now {
                            line += "  quiet hours now: held (\(d.quiet_policy ?? "")) until \(d.quiet_until ?? "?")"
                        }
                        print(TerminalText.safe(line))
                    }
                    if deliveries.isEmpty {
                        printError("no receiver: no route matches and there is no default_receiver")
                    }
                    if !silencedBy.isEmpty {
                        print(TerminalText.safe("silenced now by \(silencedBy.joined(separator: ", "))"))
                    } else if !checked {
                        print("silences: not checked (no database)")
                    }
                }
                return deliveries.isEmpty ? 1 : 0
            }
        }
    }
}
