import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonRegex
import KlaxonStore
import NIOCore

/// What the Alertmanager API needs to know of the daemon beyond its store: how alerts are routed
/// (receivers and groups), the rules' own receivers, where the status site is, when it started.
public struct AlertmanagerAPISettings: Sendable {
    /// The routing tree; nil when the daemon has no receivers (alerts then show none).
    public var routing: Routing?
    /// Each rule's `notify` receivers, by rule name.
    public var notify: [String: [String]]
    /// The configured receivers' names (`/api/v2/receivers`, the config in `/api/v2/status`).
    public var receivers: [String]
    /// The status site's address (`external_url`): an alert's `generatorURL` is its page there.
    public var externalURL: String?
    /// When the daemon started (seconds): `uptime` in `/api/v2/status`.
    public var startedAt: Int64

    public init(
        routing: Routing? = nil, notify: [String: [String]] = [:], receivers: [String] = [], externalURL: String? = nil,
        startedAt: Int64 = Int64(Date().timeIntervalSince1970)
    ) {
        self.routing = routing
        self.notify = notify
        self.receivers = receivers
        self.externalURL = externalURL
        self.startedAt = startedAt
    }
}

/// Alertmanager's v2 API (`api/v2/openapi.yaml` of Alertmanager 0.25), read and silence, so that
/// `amtool`, Grafana's Alertmanager data source and Karma can talk to Klaxon: `GET /api/v2/status`,
/// `/api/v2/receivers`, `/api/v2/alerts`, `/api/v2/alerts/groups`, `/api/v2/silences`,
/// `/api/v2/silence/{id}`; `POST /api/v2/silences`; `DELETE /api/v2/silence/{id}`. The JSON has
/// Alertmanager's field names and types; an alert's labels and `fingerprint` are the webhook's
/// (`AlertIdentity.labels`, `.fingerprint`). Behind the API token, checked before anything
/// else. Errors are a JSON string, as Alertmanager answers them. Deliberate differences (no
/// inhibition, no cluster, no `POST /api/v2/alerts`, silences replaced rather than edited in place)
/// are in `docs/alertmanager-api.md`.
enum AlertmanagerAPI {
    /// The largest silence body taken (a silence is a few hundred bytes).
    static let maxBodyBytes = 64 << 10
    /// The most matchers a silence, or a query's `filter`, may have.
    static let maxMatchers = 64
    /// The most alerts or silences one answer lists (the store's largest page).
    static let maxListed = FiringQueries.maximumPage
    /// An active alert's `endsAt` is this long after now: Alertmanager's `resolve_timeout` (5m)
    /// convention for an alert still firing.
    static let resolveTimeout: Int64 = 300

    static func add(
        to router: Router<BasicRequestContext>, store: any AlertmanagerStore, settings: KlaxonHTTP.Settings,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        let view = settings.alertmanager
        // The API token, checked before anything else (a body is not read without it).
        let api = router.group().add(middleware: TeamTokenMiddleware(token: settings.apiToken))

        api.get("/api/v2/status") { _, _ -> Response in
            return respond(json: status(view()))
        }
        api.get("/api/v2/receivers") { _, _ -> Response in
            return respond(json: view().receivers.map(AlertmanagerV2.Receiver.init(name:)))
        }
        api.get("/api/v2/alerts") { request, _ -> Response in
            let query: AlertQuery
            switch AlertQuery.read(request.uri.queryParameters) {
            case .failure(let e): throw badRequest(e.message)
            case .success(let q): query = q
            }
            let t = now()
            guard let alerts = try await views(store: store, settings: view(), query: query, now: t) else {
                throw tooCostly()
            }
            let body = try await offPool { AlertmanagerV2.encode(alerts.map { $0.gettable(now: t) }) }
            return respond(body)
        }
        api.get("/api/v2/alerts/groups") { request, _ -> Response in
            let query: AlertQuery
            switch AlertQuery.read(request.uri.queryParameters) {
            case .failure(let e): throw badRequest(e.message)
            case .success(let q): query = q
            }
            let t = now()
            guard let alerts = try await views(store: store, settings: view(), query: query, now: t) else {
                throw tooCostly()
            }
            let body = try await offPool { AlertmanagerV2.encode(groups(alerts, query: query, now: t)) }
            return respond(body)
        }
        api.get("/api/v2/silences") { request, _ -> Response in
            var filter: [Matcher] = []
            let texts = request.uri.queryParameters.getAll("filter")
            guard texts.count <= maxMatchers else { throw badRequest("more than \(maxMatchers) filter matchers") }
            for text in texts {
                switch filterMatcher(text) {
                case .failure(let e): throw badRequest(e.message)
                case .success(let m): filter.append(m)
                }
            }
            let t = now()
            let listed = try await allSilences(store: store, now: t)
                .filter { s in filter.allSatisfy { f in s.matchers.contains { $0 == f } } }
            return respond(json: sorted(listed, now: t).map { gettable($0, now: t) })
        }
        api.get("/api/v2/silence/:id") { _, context -> Response in
            let t = now()
            guard let id = context.parameters.get("id"),
                let s = try await allSilences(store: store, now: t).first(where: { $0.id == id })
            else {
                throw notFound("silence not found")
            }
            return respond(json: gettable(s, now: t))
        }
        api.delete("/api/v2/silence/:id") { _, context -> Response in
            let t = now()
            guard let id = context.parameters.get("id"),
                let s = try await allSilences(store: store, now: t).first(where: { $0.id == id })
            else {
                throw notFound("silence not found")
            }
            // Expiring an expired silence changes nothing and succeeds, as in Alertmanager.
            if s.ends > t { _ = try await store.expireSilence(id: s.id, now: t) }
            return Response(status: .ok)
        }
        api.post("/api/v2/silences") { request, _ -> Response in
            if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maxBodyBytes {
                throw tooLarge()
            }
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: maxBodyBytes)
            } catch let error as HTTPError where error.status == .contentTooLarge {
                throw tooLarge()
            }
            let t = now()
            let posted: PostedSilence
            switch PostedSilence.read(Data(body.readableBytesView), now: t) {
            case .failure(let e): throw badRequest(e.message)
            case .success(let p): posted = p
            }
            var old: Silence? = nil
            if let id = posted.id {
                guard let found = try await allSilences(store: store, now: t).first(where: { $0.id == id }) else {
                    throw notFound("not found")
                }
                old = found
            }
            // The client names its author; an update may carry over the author of the silence it
            // replaces (amtool sends it back as it got it, `slack:U…` for one made from chat).
            if posted.createdBy != old?.createdBy, let problem = Silence.claimedAuthorProblem(posted.createdBy) {
                throw badRequest("silence invalid: \(problem)")
            }
            let silence: Silence
            do {
                silence = try Silence.make(
                    matchers: posted.matchers, starts: posted.starts, ends: posted.ends, now: t,
                    comment: posted.comment, createdBy: posted.createdBy)
            } catch let e as SilenceError {
                throw badRequest("silence invalid: \(e.message)")
            }
            if let old {
                // An update: Alertmanager edits a silence in place only when its matchers and start are
                // unchanged; Klaxon always replaces it (the old one ends now, the new one has a new id),
                // in one transaction that first checks the old one has not ended: of two updates of one
                // silence at once, one replaces it and the other is refused, so one silence stays active.
                switch try await store.replaceSilence(id: old.id, with: silence, now: t) {
                case .replaced: break
                case .notFound: throw notFound("not found")
                case .ended:
                    throw badRequest(
                        "silence \(old.id) has ended (expired, or replaced by another update): post it without an id")
                }
            } else {
                try await store.addSilence(silence, now: t)
            }
            return respond(json: AlertmanagerV2.SilenceCreated(silenceID: silence.id))
        }
    }

    // MARK: Alerts

    /// A firing alert as the API shows it.
    struct AlertView: Sendable {
        var labels: [(key: String, value: String)]
        var annotations: [(key: String, value: String)]
        var startsAt: Int64
        var updatedAt: Int64
        var fingerprint: String
        var generatorURL: String?
        /// Each receiver once, with the labels of the group the alert is in there.
        var deliveries: [(receiver: String, group: [(key: String, value: String)])]
        var silencedBy: [String]

        var receivers: [String] { deliveries.map(\.receiver) }
        var state: String { silencedBy.isEmpty ? "active" : "suppressed" }
        var labelSet: [String: String] {
            Dictionary(labels.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        }

        /// The alert as Alertmanager's `gettableAlert`: still firing, so it ends `resolveTimeout` from now.
        func gettable(now: Int64) -> AlertmanagerV2.GettableAlert {
            AlertmanagerV2.GettableAlert(
                annotations: object(annotations), endsAt: .init(max(now, updatedAt) + AlertmanagerAPI.resolveTimeout),
                fingerprint: fingerprint, generatorURL: generatorURL, labels: object(labels),
                receivers: receivers.map(AlertmanagerV2.Receiver.init(name:)), startsAt: .init(startsAt),
                status: .init(state: state, silencedBy: silencedBy, inhibitedBy: [], mutedBy: []),
                updatedAt: .init(updatedAt))
        }
    }

    /// The firing alerts (at most `maxListed`) the query keeps, sorted by fingerprint as Alertmanager
    /// lists them; nil when matching them against the silences and the query's filter needed more than
    /// one request's `MatchBudget` (the caller answers 503 rather than list alerts as unsilenced).
    static func views(
        store: any AlertReads & SilenceStore, settings: AlertmanagerAPISettings, query: AlertQuery, now: Int64
    )
        async throws -> [AlertView]?
    {
        let page = try await store.firingAlerts(limit: maxListed, after: nil)
        let silences = try await store.activeSilences(now: now)
        return try await offPool {
            var budget = MatchBudget(steps: MatchBudget.requestSteps)
            var out: [AlertView] = []
            for a in page.alerts {
                // The filter first: a narrow one spares matching the silences against what it leaves out.
                var v = view(a, settings: settings, silencedBy: [], now: now)
                switch query.matches(v, budget: &budget) {
                case true?: break
                case false?: continue
                case nil: return nil
                }
                let (muting, decided) = Silence.muting(silences, a.transition.matchLabels, at: now, budget: &budget)
                guard decided else { return nil }
                v.silencedBy = muting.map(\.id).sorted()
                switch query.keeps(v, budget: &budget) {
                case true?: out.append(v)
                case false?: continue
                case nil: return nil
                }
            }
            return out.sorted { $0.fingerprint < $1.fingerprint }
        }
    }

    /// 503: the request would cost more matching than it may.
    static func tooCostly() -> APIError {
        .alertmanager(
            .serviceUnavailable,
            "matching the alerts against the silences and filters needs more work than one request may do"
                + " (\(MatchBudget.requestSteps) regex steps): narrow the filter, or expire costly regex silences")
    }

    static func view(_ a: FiringAlert, settings: AlertmanagerAPISettings, silencedBy: [String], now: Int64)
        -> AlertView
    {
        let t = a.transition
        // The webhook's labels and annotations; the message is the transition's summary (a list
        // does not render each rule's template).
        let annotations = AlertIdentity.annotations(
            t, id: a.episode, summary: t.summary, dataTime: Timestamp.format(t.at))
        var deliveries: [(receiver: String, group: [(key: String, value: String)])] = []
        if let routing = settings.routing {
            for d in routing.deliveries(for: t, notify: settings.notify[t.rule] ?? []) {
                let groupBy = routing.route(d.route).groupBy
                deliveries.append((d.receiver, AlertIdentity.groupLabels(of: t, by: groupBy)))
            }
        }
        var url: String? = nil
        if let base = settings.externalURL, !base.isEmpty, a.episode > 0 {
            var b = base
            while b.hasSuffix("/") { b.removeLast() }
            url = b + "/alerts/\(a.episode)"
        }
        return AlertView(
            labels: AlertIdentity.labels(t), annotations: annotations, startsAt: a.startedAt, updatedAt: t.at,
            fingerprint: AlertIdentity.fingerprint(t), generatorURL: url, deliveries: deliveries,
            silencedBy: silencedBy)
    }

    /// The query parameters of `/api/v2/alerts` and `/api/v2/alerts/groups`.
    struct AlertQuery: Sendable {
        var filter: [Matcher] = []
        var active = true
        var silenced = true
        var inhibited = true
        var unprocessed = true
        var receiver: LinearRegex? = nil

        static func read(_ query: Parameters) -> Result<AlertQuery, Refusal> {
            var q = AlertQuery()
            let texts = query.getAll("filter")
            guard texts.count <= maxMatchers else {
                return .failure(Refusal("more than \(maxMatchers) filter matchers"))
            }
            for text in texts {
                switch filterMatcher(text) {
                case .failure(let e): return .failure(e)
                case .success(let m): q.filter.append(m)
                }
            }
            let flags: [(String, WritableKeyPath<AlertQuery, Bool>)] = [
                ("active", \.active), ("silenced", \.silenced), ("inhibited", \.inhibited),
                ("unprocessed", \.unprocessed),
            ]
            for (name, flag) in flags {
                guard let text = query.get(name) else { continue }
                switch text.lowercased() {
                case "true", "1": q[keyPath: flag] = true
                case "false", "0": q[keyPath: flag] = false
                default: return .failure(Refusal("\(name) in query must be of type boolean: \"\(shown(text))\""))
                }
            }
            if let text = query.get("receiver") {
                do {
                    q.receiver = try LinearRegex.compiled(text)
                } catch {
                    return .failure(Refusal("failed to parse receiver param: \(shown("\(error)"))"))
                }
            }
            return .success(q)
        }

        /// Whether an alert that `matches` is listed (Alertmanager's `alertFilter` and receiver
        /// filter), within `budget`: nil when it ran out first.
        func keeps(_ a: AlertView, budget: inout MatchBudget) -> Bool? {
            if !active && a.silencedBy.isEmpty { return false }
            if !silenced && !a.silencedBy.isEmpty { return false }
            if let receiver {
                var any = false
                for r in a.receivers {
                    guard let hit = receiver.fullMatch(r, budget: &budget) else { return nil }
                    if hit {
                        any = true
                        break
                    }
                }
                if !any { return false }
            }
            return true
        }

        /// The filter matchers against the alert's labels, as Alertmanager's `matchFilterLabels`: an
        /// empty value matches a missing label for `=`/`=~` and a present one for `!=`/`!~`.
        func matches(_ a: AlertView, budget: inout MatchBudget) -> Bool? {
            let labels = a.labelSet
            // Equality first: one that fails decides without running a regex.
            for m in filter.filter({ $0.regex == nil }) + filter.filter({ $0.regex != nil }) {
                let present = labels[m.name] != nil
                switch m.op {
                case .notEqual, .notRegex: if m.value.isEmpty && present { continue }
                case .equal, .regex: if m.value.isEmpty && !present { continue }
                }
                guard let hit = m.matches(labels, budget: &budget) else { return nil }
                if !hit { return false }
            }
            return true
        }
    }

    /// The alert groups: one per receiver and group labels, as the routing groups alerts; sorted by
    /// receiver then labels, the alerts in each by fingerprint.
    static func groups(_ alerts: [AlertView], query: AlertQuery, now: Int64) -> [AlertmanagerV2.AlertGroup] {
        struct Key: Hashable {
            var receiver: String
            var labels: [String]
        }
        var order: [Key] = []
        var members: [Key: (labels: [(key: String, value: String)], alerts: [AlertView])] = [:]
        // `alerts` are those the query keeps (`views`); the receiver regex is matched once per name.
        var receiverHits: [String: Bool] = [:]
        for a in alerts {
            for d in a.deliveries {
                if let receiver = query.receiver {
                    let hit = receiverHits[d.receiver] ?? receiver.fullMatch(d.receiver)
                    receiverHits[d.receiver] = hit
                    if !hit { continue }
                }
                let key = Key(receiver: d.receiver, labels: d.group.flatMap { [$0.key, $0.value] })
                if members[key] == nil {
                    order.append(key)
                    members[key] = (d.group, [])
                }
                members[key]?.alerts.append(a)
            }
        }
        order.sort {
            ($0.receiver, $0.labels.joined(separator: "\u{1F}")) < ($1.receiver, $1.labels.joined(separator: "\u{1F}"))
        }
        return order.map { key in
            let group = members[key]!
            return AlertmanagerV2.AlertGroup(
                alerts: group.alerts.map { $0.gettable(now: now) }, labels: object(group.labels),
                receiver: .init(name: key.receiver))
        }
    }

    // MARK: Silences

    /// The silences the API lists: all of them, expired ones too, while the store holds at most
    /// `maxListed`; beyond that, those that have not ended.
    static func allSilences(store: any SilenceStore, now: Int64) async throws -> [Silence] {
        let all = try await store.silences(now: now, includeExpired: true, limit: maxListed, after: nil)
        if all.next == nil { return all.silences }
        return try await store.silences(now: now, includeExpired: false, limit: maxListed, after: nil).silences
    }

    static func state(_ s: Silence, now: Int64) -> String {
        s.ends <= now ? "expired" : s.starts > now ? "pending" : "active"
    }

    /// Alertmanager's order: active (ending soonest first), pending (starting soonest first),
    /// expired (ended most recently first).
    static func sorted(_ silences: [Silence], now: Int64) -> [Silence] {
        let rank = ["active": 0, "pending": 1, "expired": 2]
        return silences.sorted { a, b in
            let (sa, sb) = (state(a, now: now), state(b, now: now))
            if sa != sb { return rank[sa]! < rank[sb]! }
            switch sa {
            case "active": return (a.ends, a.id) < (b.ends, b.id)
            case "pending": return (a.starts, a.id) < (b.starts, b.id)
            default: return (a.ends, b.id) > (b.ends, a.id)
            }
        }
    }

    /// A silence as Alertmanager's `gettableSilence`. Klaxon keeps no separate update time:
    /// `updatedAt` is when the silence ended for an expired one, else when it starts.
    static func gettable(_ s: Silence, now: Int64) -> AlertmanagerV2.GettableSilence {
        let st = state(s, now: now)
        return AlertmanagerV2.GettableSilence(
            comment: s.comment, createdBy: s.createdBy, endsAt: .init(s.ends), id: s.id,
            matchers: s.matchers.map(AlertmanagerV2.Matcher.init), startsAt: .init(s.starts), status: .init(state: st),
            updatedAt: .init(st == "expired" ? s.ends : min(s.starts, now)))
    }

    /// A `postableSilence`, checked as Alertmanager checks it.
    struct PostedSilence: Sendable {
        var id: String?
        var matchers: [Matcher]
        var starts: Int64
        var ends: Int64
        var comment: String
        var createdBy: String

        static func read(_ data: Data, now: Int64) -> Result<PostedSilence, Refusal> {
            let body: AlertmanagerV2.PostableSilence
            switch AlertmanagerV2.PostableSilence.decode(data) {
            case .failure(let refusal): return .failure(refusal)
            case .success(let b): body = b
            }
            if let problem = Silence.authorProblem(body.createdBy) ?? Silence.commentProblem(body.comment) {
                return .failure(Refusal("silence invalid: \(problem)"))
            }
            var matchers: [Matcher] = []
            for (i, item) in body.matchers.enumerated() {
                switch matcher(item) {
                case .failure(let e):
                    return .failure(Refusal("silence invalid: invalid label matcher \(i): \(e.message)"))
                case .success(let m): matchers.append(m)
                }
            }
            if matchers.allSatisfy(\.matchesEmpty) {
                return .failure(Refusal("silence invalid: at least one matcher must not match the empty string"))
            }
            let (starts, ends) = (body.startsAt, body.endsAt)
            if starts >= ends {
                return .failure(Refusal("Failed to create silence: start time must be before end time"))
            }
            if ends < now {
                return .failure(Refusal("Failed to create silence: end time can't be in the past"))
            }
            if ends - now > DurationText.maximum {
                return .failure(
                    Refusal(
                        "Failed to create silence: end time is more than \(DurationText.format(DurationText.maximum)) (10 years) from now"
                    ))
            }
            return .success(
                PostedSilence(
                    id: body.id, matchers: matchers, starts: starts, ends: ends, comment: body.comment,
                    createdBy: body.createdBy))
        }

        /// One of Alertmanager's matchers as Klaxon's, stored as it is (`SilenceRecord.matchers`):
        /// any value, as Alertmanager takes it.
        static func matcher(_ m: AlertmanagerV2.Matcher) -> Result<Matcher, Refusal> {
            guard m.value.utf8.count <= Matcher.maxValueBytes else {
                return .failure(Refusal("the value is longer than \(Matcher.maxValueBytes) bytes"))
            }
            let isEqual = m.isEqual ?? true
            let op: Matcher.Op = m.isRegex ? (isEqual ? .regex : .notRegex) : (isEqual ? .equal : .notEqual)
            do {
                return .success(try Matcher(name: m.name, op: op, value: m.value))
            } catch {
                return .failure(Refusal("\(error)"))
            }
        }
    }

    // MARK: Status

    /// `/api/v2/status`: no cluster; the routing as an Alertmanager config (receivers by name only:
    /// no URL, address or secret); Klaxon's version in `versionInfo` (`goVersion` says which Swift).
    static func status(_ am: AlertmanagerAPISettings) -> AlertmanagerV2.AlertmanagerStatus {
        AlertmanagerV2.AlertmanagerStatus(
            cluster: .init(peers: [], status: "disabled"), config: .init(original: configText(am)),
            uptime: .init(am.startedAt),
            versionInfo: .init(
                branch: "unknown", buildDate: BuildInfo.date, buildUser: "klaxon", goVersion: "swift\(BuildInfo.swift)",
                revision: BuildInfo.revision, version: BuildInfo.version))
    }

    /// The routing as Alertmanager configuration YAML. A Klaxon route with several receivers is one
    /// Alertmanager route per receiver (each but the last with `continue: true`). Strings are JSON
    /// quoted (valid YAML double-quoted scalars), so no label value can break the document.
    static func configText(_ am: AlertmanagerAPISettings) -> String {
        let routing = am.routing ?? Routing()
        func q(_ s: String) -> String { JSONText.string(s) }
        func groupBy(_ names: [String]) -> String {
            "[" + names.map { q($0 == "rule" ? "alertname" : $0) }.joined(separator: ", ") + "]"
        }
        func duration(_ seconds: Int64) -> String { DurationText.format(seconds) }
        // Alertmanager refuses a zero group_interval; Klaxon's 0 sends each change of a group at once. The
        // smallest interval Alertmanager takes says the same to amtool (`config routes show|test`).
        func interval(_ seconds: Int64) -> String {
            seconds > 0 ? duration(seconds) : "1ms  # Klaxon: 0 (each change at once); Alertmanager needs more than 0"
        }
        // As the alerts carry them (`alertname`, not Klaxon's `rule`), quoted as Alertmanager's matcher parser
        // reads them (`name="value"`, `\"` and `\\` escaped), so any value survives.
        func matcher(_ m: Matcher) -> String {
            let name = m.name == "rule" ? "alertname" : m.name
            return q(name + m.op.rawValue + Escape.matcherValue(m.value))
        }
        var lines = [
            "# Klaxon \(BuildInfo.version): its routing, as Alertmanager would write it (receivers by name only).",
            "route:",
            "  receiver: \(q(routing.defaultReceiver ?? ""))",
            "  group_by: \(groupBy(routing.defaults.groupBy))",
            "  group_wait: \(duration(routing.defaults.groupWait))",
            "  group_interval: \(interval(routing.defaults.groupInterval))",
        ]
        if let r = routing.defaults.repeatInterval { lines.append("  repeat_interval: \(duration(r))") }
        if !routing.routes.isEmpty { lines.append("  routes:") }
        for route in routing.routes {
            for (i, receiver) in route.receivers.enumerated() {
                lines.append("  - receiver: \(q(receiver))")
                lines.append("    matchers: [\(route.matchers.map(matcher).joined(separator: ", "))]")
                lines.append("    group_by: \(groupBy(route.groupBy))")
                lines.append("    group_wait: \(duration(route.groupWait))")
                lines.append("    group_interval: \(interval(route.groupInterval))")
                if let r = route.repeatInterval { lines.append("    repeat_interval: \(duration(r))") }
                lines.append("    continue: \(route.continue || i < route.receivers.count - 1)")
            }
        }
        lines.append("receivers:")
        for name in am.receivers { lines.append("- name: \(q(name))") }
        if am.receivers.isEmpty { lines[lines.count - 1] = "receivers: []" }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Helpers

    /// A `filter` matcher as Alertmanager's `labels.ParseMatcher` reads it: `name="value"` (the
    /// quotes optional, `\"`, `\\` and `\n` escaped within them), with `=`, `!=`, `=~` or `!~`.
    static func filterMatcher(_ text: String) -> Result<Matcher, Refusal> {
        guard text.utf8.count <= LinearRegex.maxPatternBytes + 256 else {
            return .failure(Refusal("bad matcher format: longer than \(LinearRegex.maxPatternBytes + 256) bytes"))
        }
        do {
            let m = try Matcher.parse(text)
            guard m.value.contains("\\") else { return .success(m) }
            return .success(try Matcher(name: m.name, op: m.op, value: unescaped(m.value)))
        } catch {
            return .failure(Refusal("bad matcher format: \(error)"))
        }
    }

    static func unescaped(_ s: String) -> String {
        var out = ""
        var escaping = false
        for c in s {
            if escaping {
                out.append(c == "n" ? "\n" : c)
                escaping = false
            } else if c == "\\" {
                escaping = true
            } else {
                out.append(c)
            }
        }
        if escaping { out.append("\\") }
        return out
    }

    typealias Refusal = AlertmanagerV2.Refusal

    /// At most 200 characters of a value from a request, control characters escaped.
    static func shown(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let cut = scalars.index(scalars.startIndex, offsetBy: 200, limitedBy: scalars.endIndex),
            cut != scalars.endIndex
        else { return Escape.controlsShown(text) }
        return Escape.controlsShown(String(scalars[..<cut])) + "…"
    }

    static func object(_ pairs: [(key: String, value: String)]) -> [String: String] {
        Dictionary(pairs.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    static func respond(json value: some Encodable) -> Response { respond(AlertmanagerV2.encode(value)) }

    static func respond(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Alertmanager answers an error with the message as a JSON string (`APIError.Form.alertmanager`).
    static func badRequest(_ message: String) -> APIError { .alertmanager(.badRequest, message) }

    static func notFound(_ message: String) -> APIError { .alertmanager(.notFound, message) }

    static func tooLarge() -> APIError {
        .alertmanager(.contentTooLarge, "the body is larger than \(maxBodyBytes) bytes")
    }
}
