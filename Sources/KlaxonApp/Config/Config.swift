import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import Yams

/// `klaxon.yaml`. Strict like rule files: unknown keys, wrong types and dangling references are errors
/// with `PATH:LINE:COL`. Relative paths inside it are relative to the config file's folder. Secrets
/// come from `${ENV}` references or `*_file` paths and never print.
public struct Config: Sendable {
    /// Where the store lives (`database:`): a SQLite file, or a PostgreSQL server for
    /// `database: postgres://…` and `database: {url: postgres://…, password_file: …}`. Nil: the
    /// default, `./klaxon.sqlite`.
    public var store: StoreLocation?
    /// The SQLite database file, or nil when `database:` names PostgreSQL (or nothing). Setting it
    /// selects that SQLite file.
    public var database: String? {
        get { store?.sqlitePath }
        set { store = newValue.map { .sqlite(path: $0) } }
    }
    /// Rule files or folders.
    public var rules: [String]?
    public var receivers: [Receiver] = []
    public var routing = Routing()
    /// Where a `delivery-failing` alert goes when a notification is given up on.
    public var fallbackReceiver: String?
    /// Seconds (`notify_max_age`, default 1h; 0 turns it off): a transition whose data is older when
    /// it is logged is recorded, not sent as news; a route may set its own.
    public var notifyMaxAge: Int64 = 3600
    /// The base URL people reach the status site at (`external_url`): the links in messages and
    /// the webhook payload's `externalURL` and `generatorURL`; nil: no links.
    public var externalURL: String?
    /// Seconds after which an undelivered notification is dead.
    public var giveUpAfter: Int64 = 86400
    /// Seconds a claimed notification stays with the instance that claimed it (renewed while it is
    /// being sent); after that instance dies, another sends it, under the same key.
    public var deliveryLease: Int64 = 30
    /// Where readings come from (`klaxon fetch`, the daemon).
    public var sources: [ConfiguredSource] = []
    /// Users who may act on every owner's trips (`trip … --all`).
    public var admins: [String] = []
    /// Where the daemon's HTTP server listens (`host:port`).
    public var listen = (host: "127.0.0.1", port: 9464)
    /// Bearer token for the HTTP API (`api: {token | token_file}`); nil turns the API off.
    public var apiToken: Secret?
    /// Owner → token for the trips API (`api.owners: [{owner, token | token_file}]`).
    public var ownerTokens: [String: Secret] = [:]
    /// The largest body `POST /api/v1/readings` takes (`api.max_push_bytes`, default 4 MiB).
    public var maxPushBytes = KlaxonHTTP.Settings.defaultMaxPushBytes
    /// How far ahead of now a reading may be dated (`readings: {max_future: 1d}`); later ones are
    /// refused at ingest, in pushes and from sources.
    public var futureBound = FutureBound.standard
    /// Chat commands: Slack's signing secret, Mattermost's token, chat user → trip owner.
    public var slackSigningSecret: Secret?
    public var mattermostToken: Secret?
    public var chatUsers: [String: String] = [:]
    /// Who may ack and silence from chat, commands and buttons (`chat.may_act`): chat ids
    /// (`TEAM:USER` or `USER`) and owner names of `chat.users`. Nil: anyone the platform vouches for.
    public var chatMayAct: [String]?
    /// What a Slack button press's `response_url` must start with (`chat.slack.response_url_prefix`);
    /// nil: Slack's own hosts.
    public var slackResponseURLPrefixes: [String]?
    /// How long each kind of history is kept (`retention:`); the daemon and `klaxon prune` prune the rest.
    public var retention = Retention()
    /// The status site (`site:`): on or off, its refresh, its time zone, the key that signs its cookies.
    public var site = SiteConfig()
    /// What works but deserves a look (a secret file anyone may read): `klaxon check` prints these,
    /// the daemon logs them at start.
    public var warnings: [Diagnostic] = []
    /// Every receiver name declared, even those whose other keys have errors (so one mistake does not
    /// cascade into "undefined receiver" errors elsewhere).
    var declaredReceivers: Set<String> = []
    /// Positions of names, for cross-reference errors: receiver name → where it is used.
    var references: [(name: String, path: String, line: Int, column: Int, what: String)] = []

    public init(database: String? = nil, rules: [String]? = nil) {
        self.store = database.map { .sqlite(path: $0) }
        self.rules = rules
    }

    /// `site:` in `klaxon.yaml`.
    public struct SiteConfig: Sendable {
        public var enabled = true
        /// Seconds between the pages' refreshes (0: off).
        public var refresh = 60
        /// Where times are shown when a station has no zone of its own (default: the machine's).
        public var timeZone: TimeZone = .current
        /// Signs sign-in cookies and CSRF tokens; without it, a random key per start (a restart signs
        /// everybody out).
        public var secret: Secret?
        /// `site.hosts`: the `Host` names the site answers besides IP literals and `localhost` (DNS
        /// rebinding); nil: the listener decides (loopback names only on a loopback listener, any
        /// name on `0.0.0.0`). See `SiteHosts`.
        public var hosts: [String]?

        public init() {}
    }

    public static let keys = [
        "database", "rules", "sources", "receivers", "routes", "default_receiver", "fallback_receiver",
        "give_up_after", "delivery_lease", "admins", "listen", "api", "chat", "retention", "site", "readings",
        "notify_max_age", "external_url",
    ]

    public func receiver(named name: String) -> Receiver? { receivers.first { $0.name == name } }

    /// Loads and validates the file; `environment` resolves `${NAME}` references.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> Config
    {
        let diagnostics = Diagnostics()
        let config = load(path: path, environment: environment, diagnostics: diagnostics)
        guard diagnostics.isEmpty else { throw DiagnosticsError(diagnostics: diagnostics.items) }
        return config
    }

    /// Loads what it can, reporting every problem into `diagnostics`.
    public static func load(path: String, environment: [String: String], diagnostics: Diagnostics) -> Config {
        let file = YAMLFile(path: path, diagnostics: diagnostics)
        guard let text = file.read() else { return Config() }
        var config = Config()
        if let root = file.compose(text), var m = file.map(root, what: "the config") {
            let reader = ConfigReader(
                file: file, dir: (path as NSString).deletingLastPathComponent, environment: environment)
            if let n = m.value("database") { config.store = reader.database(n) }
            if let n = m.value("rules") {
                config.rules =
                    n.scalar != nil
                    ? file.string(n, what: "rules").map { [reader.resolve($0)] }
                    : file.stringList(n, what: "rules")?.map(reader.resolve)
            }
            if let n = m.value("admins") { config.admins = file.stringList(n, what: "admins") ?? [] }
            if let n = m.value("listen"), let l = file.string(n, what: "listen") {
                let parts = l.split(separator: ":", omittingEmptySubsequences: false)
                if parts.count == 2, !parts[0].isEmpty, let port = Int(parts[1]), (0...65535).contains(port) {
                    config.listen = (String(parts[0]), port)
                } else {
                    file.error(n, "listen must be HOST:PORT like 127.0.0.1:9464, not \"\(l)\"")
                }
            }
            if let n = m.value("chat"), var cm = file.map(n, what: "chat") {
                if let sn = cm.value("slack"), var sm = file.map(sn, what: "chat.slack") {
                    config.slackSigningSecret = reader.secret(&sm, "signing_secret", required: true, what: "chat.slack")
                    if let pn = sm.value("response_url_prefix") {
                        let given =
                            pn.scalar != nil
                            ? file.string(pn, what: "chat.slack.response_url_prefix").map { [$0] }
                            : file.stringList(pn, what: "chat.slack.response_url_prefix")
                        if let given {
                            if let bad = given.first(where: { Self.responseURLPrefixProblem($0) != nil }) {
                                file.error(
                                    pn,
                                    "chat.slack.response_url_prefix \"\(String(bad.prefix(200)))\" \(Self.responseURLPrefixProblem(bad)!)"
                                )
                            } else if given.isEmpty {
                                file.error(pn, "chat.slack.response_url_prefix needs at least one URL prefix")
                            } else {
                                config.slackResponseURLPrefixes = given
                            }
                        }
                    }
                    sm.rejectUnknown(known: ConfigKeys.chatSlack, what: "chat.slack")
                }
                if let mn = cm.value("mattermost"), var mm = file.map(mn, what: "chat.mattermost") {
                    config.mattermostToken = reader.secret(&mm, "token", required: true, what: "chat.mattermost")
                    mm.rejectUnknown(known: ConfigKeys.chatMattermost, what: "chat.mattermost")
                }
                if let un = cm.value("users") { config.chatUsers = file.stringMap(un, what: "chat.users") ?? [:] }
                if let an = cm.value("may_act"), let names = file.stringList(an, what: "chat.may_act") {
                    if let bad = names.first(where: {
                        $0.trimmingCharacters(in: .whitespaces).isEmpty || $0.count > 200
                    }) {
                        file.error(an, "chat.may_act: \"\(String(bad.prefix(40)))\" is not a chat id or an owner name")
                    } else {
                        config.chatMayAct = names
                    }
                }
                cm.rejectUnknown(known: ConfigKeys.chat, what: "chat")
            }
            if let n = m.value("api"), var am = file.map(n, what: "api") {
                config.apiToken = reader.secret(&am, "token", required: true, what: "api")
                if let on = am.value("owners"), let items = file.list(on, what: "api.owners") {
                    for item in items {
                        guard var om = file.map(item, what: "an owner") else { continue }
                        let owner = om.required("owner", what: "the owner").flatMap { file.string($0, what: "owner") }
                        let token = reader.secret(&om, "token", required: true, what: "api.owners")
                        om.rejectUnknown(known: ConfigKeys.apiOwner, what: "an owner")
                        if let owner, let token { config.ownerTokens[owner] = token }
                    }
                }
                if let bn = am.value("max_push_bytes"), let v = file.integer(bn, what: "api.max_push_bytes") {
                    if (1_024...(256 << 20)).contains(v) {
                        config.maxPushBytes = v
                    } else {
                        file.error(bn, "api.max_push_bytes must be between 1024 and 268435456 (256 MiB), not \(v)")
                    }
                }
                am.rejectUnknown(known: ConfigKeys.api, what: "api")
            }
            if let n = m.value("retention") { config.retention = reader.retention(n) }
            if let n = m.value("site"), var sm = file.map(n, what: "site") {
                if let en = sm.value("enabled"), let v = file.bool(en, what: "site.enabled") { config.site.enabled = v }
                if let rn = sm.value("refresh"), let d = reader.siteRefresh(rn) {
                    if (0...86_400).contains(d) && (d == 0 || d >= 5) {
                        config.site.refresh = Int(d)
                    } else {
                        file.error(rn, "site.refresh must be 0 (off) or between 5s and 24h")
                    }
                }
                if let zn = sm.value("time_zone"), let name = file.string(zn, what: "site.time_zone") {
                    if let zone = TimeZone(identifier: name) {
                        config.site.timeZone = zone
                    } else {
                        file.error(
                            zn, "site.time_zone: unknown time zone \"\(name)\" (an IANA name such as America/Chicago)")
                    }
                }
                let secretNode = sm.value("secret") ?? sm.value("secret_file") ?? sm.node
                if let secret = reader.secret(&sm, "secret", required: false, what: "site") {
                    if secret.value.utf8.count >= 32 {
                        config.site.secret = secret
                    } else {
                        file.error(secretNode, "site.secret must be at least 32 characters (it signs sign-in cookies)")
                    }
                }
                if let hn = sm.value("hosts"), let items = file.list(hn, what: "site.hosts") {
                    var names: [String] = []
                    for item in items {
                        guard let name = file.string(item, what: "site.hosts") else { continue }
                        if SiteHosts.isValidName(name) {
                            names.append(name.lowercased())
                        } else {
                            file.error(
                                item,
                                "site.hosts: \"\(name.prefix(80))\" is not a host name (letters, digits, '-', '.', '_'; no port or scheme), or \"*\" for any"
                            )
                        }
                    }
                    config.site.hosts = names
                }
                sm.rejectUnknown(known: ConfigKeys.site, what: "site")
            }
            if let n = m.value("readings"), var rm = file.map(n, what: "readings") {
                if let fn = rm.value("max_future"), let d = file.duration(fn, what: "readings.max_future") {
                    if (0...FutureBound.maximumMargin).contains(d) {
                        config.futureBound = FutureBound(margin: d)
                    } else {
                        file.error(fn, "readings.max_future must be from 0s to 366d, not \(DurationText.format(d))")
                    }
                }
                rm.rejectUnknown(known: ConfigKeys.readings, what: "readings")
            }
            if let n = m.value("give_up_after"), let d = file.duration(n, what: "give_up_after") {
                config.giveUpAfter = d
            }
            if let n = m.value("delivery_lease"), let d = file.duration(n, what: "delivery_lease") {
                if (5...3600).contains(d) {
                    config.deliveryLease = d
                } else {
                    file.error(n, "delivery_lease must be from 5s to 1h, not \(DurationText.format(d))")
                }
            }
            if let n = m.value("receivers"), let items = file.list(n, what: "receivers") {
                for item in items {
                    if let name = item.mapping?["name"]?.scalar?.string { config.declaredReceivers.insert(name) }
                    guard let r = reader.receiver(item) else { continue }
                    if config.receivers.contains(where: { $0.name == r.name }) {
                        file.error(item, "receiver name \"\(r.name)\" is used twice")
                    } else {
                        config.receivers.append(r)
                    }
                }
            }
            if let n = m.value("sources"), let items = file.list(n, what: "sources") {
                for item in items {
                    guard let source = reader.source(item) else { continue }
                    if config.sources.contains(where: { $0.source.name == source.source.name }) {
                        file.error(item, "source name \"\(source.source.name)\" is used twice")
                    } else {
                        config.sources.append(source)
                    }
                }
            }
            if let n = m.value("routes"), let items = file.list(n, what: "routes") {
                config.routing.routes = items.compactMap { reader.route($0, references: &config.references) }
            }
            if let n = m.value("notify_max_age"), let v = file.duration(n, what: "notify_max_age") {
                if v < 0 {
                    file.error(n, "notify_max_age must be 0s (no limit) or longer")
                } else {
                    config.notifyMaxAge = v
                }
            }
            config.routing.defaults.notifyMaxAge = config.notifyMaxAge
            for i in config.routing.routes.indices where config.routing.routes[i].notifyMaxAge < 0 {
                config.routing.routes[i].notifyMaxAge = config.notifyMaxAge
            }
            if let n = m.value("external_url"), let url = file.string(n, what: "external_url") {
                if let problem = Self.externalURLProblem(url) {
                    file.error(n, "external_url \"\(String(url.prefix(200)))\" \(problem)")
                } else {
                    var u = url
                    while u.hasSuffix("/") { u.removeLast() }
                    config.externalURL = u
                }
            }
            for key in ["default_receiver", "fallback_receiver"] {
                if let n = m.value(key), let name = file.string(n, what: key) {
                    if key == "default_receiver" {
                        config.routing.defaultReceiver = name
                    } else {
                        config.fallbackReceiver = name
                    }
                    config.references.append((name, path, n.mark?.line ?? 1, n.mark?.column ?? 1, key))
                }
            }
            m.rejectUnknown(known: keys, what: "the config")
            for ref in config.references where !config.declaredReceivers.contains(ref.name) {
                diagnostics.add(
                    Diagnostic(
                        path: ref.path, line: ref.line, column: ref.column,
                        message: "\(ref.what) names undefined receiver \"\(ref.name)\"\(config.knownReceivers)"))
            }
        }
        config.warnings = diagnostics.warnings
        return config
    }

    /// Why a URL cannot be `external_url` (nil: it can): an absolute http(s) URL with a host, no
    /// query, fragment or credentials, of reasonable length (it goes into every message).
    static func externalURLProblem(_ url: String) -> String? {
        guard url.utf8.count <= 512 else { return "is longer than 512 bytes" }
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = c.host, !host.isEmpty
        else { return "must be an absolute http:// or https:// URL with a host" }
        if c.query != nil || c.fragment != nil { return "must not have a query or fragment" }
        if c.user != nil || c.password != nil { return "must not hold credentials" }
        if url.unicodeScalars.contains(where: {
            $0.value < 0x21 || $0.value == 0x7f || $0 == "\"" || $0 == "<" || $0 == ">"
        }) {
            return "must not contain spaces, quotes or angle brackets"
        }
        return nil
    }

    /// Why a string cannot be a `response_url` prefix (nil: it can): an absolute http(s) URL with a
    /// host, ending in `/` right after the host or a path (so `https://hooks.slack.com` cannot
    /// also allow `https://hooks.slack.com.evil.example/`), without credentials, query or spaces.
    static func responseURLPrefixProblem(_ prefix: String) -> String? {
        guard prefix.utf8.count <= 512 else { return "is longer than 512 bytes" }
        guard let c = URLComponents(string: prefix), let scheme = c.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = c.host, !host.isEmpty
        else { return "must be an absolute http:// or https:// URL with a host" }
        if c.user != nil || c.password != nil || c.query != nil || c.fragment != nil {
            return "must not hold credentials, a query or a fragment"
        }
        if prefix.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7f }) {
            return "must not contain spaces"
        }
        guard prefix.hasSuffix("/"), !c.path.isEmpty else { return "must end with / (like https://hooks.slack.com/)" }
        return nil
    }

    /// ` (receivers are a, b)`, for messages about receiver names.
    public var knownReceivers: String {
        declaredReceivers.isEmpty
            ? " (no receivers are defined)" : " (receivers are \(declaredReceivers.sorted().joined(separator: ", ")))"
    }

    /// Cross-checks rules against the config: every `notify` must name a defined receiver.
    public func check(rules: [Rule]) -> [Diagnostic] {
        var out: [Diagnostic] = []
        for rule in rules {
            for name in rule.notify where !declaredReceivers.contains(name) {
                let parts = rule.origin.split(separator: ":")
                let line = parts.count >= 3 ? Int(parts[parts.count - 2]) ?? 1 : 1
                let column = parts.count >= 3 ? Int(parts[parts.count - 1]) ?? 1 : 1
                let path = parts.count >= 3 ? parts.dropLast(2).joined(separator: ":") : rule.origin
                out.append(
                    Diagnostic(
                        path: path, line: line, column: column,
                        message: "rule \"\(rule.name)\" notify names undefined receiver \"\(name)\"\(knownReceivers)"))
            }
        }
        return out
    }
}

/// Reads the receiver and route parts of the config.
struct ConfigReader {
    let file: YAMLFile
    let dir: String
    let environment: [String: String]

    func resolve(_ p: String) -> String {
        p.hasPrefix("/") || dir.isEmpty ? p : (dir as NSString).appendingPathComponent(p)
    }

    static let receiverKeys: [String: [String]] = [
        "webhook": [
            "url", "url_file", "preset", "template", "headers", "hmac_secret", "hmac_secret_file", "timeout",
            "rate_limit", "connections",
        ],
        "email": [
            "smtp_url", "starttls", "username", "password", "password_file", "from", "to", "subject", "text", "html",
            "timeout",
            "rate_limit", "connections",
        ],
        "stdout": ["format"],
    ]

    /// Expands `${NAME}` from the environment; a missing variable is an error naming it (not a value).
    func expand(_ text: String, node: Node, what: String) -> String? {
        var out = ""
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            out += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                file.error(node, "\(what): unterminated ${ in the value")
                return nil
            }
            let name = String(rest[open.upperBound..<close])
            guard let value = environment[name] else {
                file.error(node, "\(what): environment variable \(name) is not set")
                return nil
            }
            out += value
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// `database:`: a SQLite file (relative to the config's folder), a `postgres://` URL (with
    /// `${ENV}` expansion), or `{url: postgres://…, password | password_file}`. Errors never quote a URL.
    func database(_ node: Node) -> StoreLocation? {
        var url: String?
        var password: Secret?
        if node.scalar != nil {
            guard let text = file.string(node, what: "database") else { return nil }
            guard StoreLocation.isPostgresURL(text) else { return .sqlite(path: resolve(text)) }
            url = text
        } else {
            guard var m = file.map(node, what: "database") else { return nil }
            url = m.required("url", what: "database").flatMap { file.string($0, what: "database.url") }
            password = secret(&m, "password", required: false, what: "database")
            m.rejectUnknown(known: ConfigKeys.database, what: "database")
            if let text = url, !StoreLocation.isPostgresURL(text) {
                file.error(
                    m.value("url") ?? node,
                    "database.url must be a postgres:// URL (give a SQLite file as database: PATH)")
                return nil
            }
        }
        guard let url else { return nil }
        do {
            return try StoreLocation.parse(url, environment: environment, password: password?.value)
        } catch {
            file.error(node, "\(error)")
            return nil
        }
    }

    /// A secret from `key` (with `${ENV}` expansion) or `key_file`, never both.
    func secret(_ m: inout YAMLMap, _ key: String, required: Bool, what: String) -> Secret? {
        let direct = m.value(key)
        let fileNode = m.value("\(key)_file")
        switch (direct, fileNode) {
        case (.some, .some):
            file.error(fileNode, "\(what): give \(key) or \(key)_file, not both")
            return nil
        case (let n?, nil):
            guard let text = file.string(n, what: key), let value = expand(text, node: n, what: key) else {
                return nil
            }
            return checkedSecret(
                value, node: n, key: key, label: "\(what): \(key)", viaEnvironment: text.contains("${"))
        case (nil, let n?):
            guard let p = file.string(n, what: "\(key)_file") else { return nil }
            let full = resolve(p)
            let label = "\(what): \(key)_file"
            guard checkSecretFile(full, node: n, label: label) else { return nil }
            switch YAMLLimits.read(path: full, limit: 64 << 10) {  // a secret, not a device or a log
            case .success(let text):
                return checkedSecret(
                    text.trimmingCharacters(in: .whitespacesAndNewlines), node: n, key: key, label: "\(label): \(full)")
            case .failure(let problem):
                file.error(n, "\(key)_file: \(full): \(problem.message)")
                return nil
            }
        case (nil, nil):
            if required { file.error(m.node, "\(what) needs \(key) or \(key)_file") }
            return nil
        }
    }

    func seconds(_ m: inout YAMLMap, _ key: String, default d: Double) -> Double {
        m.value(key).flatMap { file.duration($0, what: key) }.map(Double.init) ?? d
    }

    func rate(_ m: inout YAMLMap) -> Double? {
        guard let n = m.value("rate_limit"), let v = file.number(n, what: "rate_limit") else { return nil }
        guard v > 0 else {
            file.error(n, "rate_limit must be more than 0 messages per second")
            return nil
        }
        return v
    }

    /// `connections:`: sends to a receiver in flight at once, 1 to 1,024.
    func connections(_ m: inout YAMLMap, default d: Int) -> Int {
        guard let n = m.value("connections"), let v = file.integer(n, what: "connections") else { return d }
        guard (1...1024).contains(v) else {
            file.error(n, "connections must be from 1 to 1024, not \(v)")
            return d
        }
        return v
    }

    /// `escapedAs`: the language the rendered text is in (`JSON`, `HTML`), whose values `{{name}}`
    /// escapes; a tag that would insert one raw (`{{{name}}}`, `{{& name}}`) is then an error.
    func template(_ m: inout YAMLMap, _ key: String, what: String, escapedAs language: String? = nil) -> String? {
        guard let n = m.value(key), let s = file.string(n, what: key) else { return nil }
        do {
            _ = try MessageRenderer.compile(s, origin: key)
        } catch {
            file.error(n, "\(what): \(error)")
            return nil
        }
        // The names it uses: the variables are a closed set (`TemplateCheck`).
        let problems = TemplateCheck.checkReceiver(s, escapedAs: language)
        for p in problems { file.error(n, "\(what): \(key): template \(p)") }
        return problems.isEmpty ? s : nil
    }

    func receiver(_ node: Node) -> Receiver? {
        guard var m = file.map(node, what: "a receiver") else { return nil }
        let before = file.diagnostics.items.count
        let name = m.required("name", what: "the receiver").flatMap { file.string($0, what: "name") }
        let what = name.map { "receiver \"\($0)\"" } ?? "the receiver"
        let typeNode = m.required("type", what: what)
        let type = typeNode.flatMap { file.string($0, what: "type") }
        var result: Receiver? = nil
        if let type, let keys = Self.receiverKeys[type] {
            switch type {
            case "webhook":
                let url = secret(&m, "url", required: true, what: what)
                var preset = Receiver.Webhook.Preset.generic
                if let n = m.value("preset"), let s = file.string(n, what: "preset") {
                    if let p = Receiver.Webhook.Preset(rawValue: s) {
                        preset = p
                    } else {
                        file.error(
                            n,
                            "preset must be one of \(Receiver.Webhook.Preset.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(s)\""
                        )
                    }
                }
                let template = template(&m, "template", what: what, escapedAs: "JSON")
                let headers = m.value("headers").flatMap { file.stringMap($0, what: "headers") } ?? [:]
                let hmac = secret(&m, "hmac_secret", required: false, what: what)
                let timeout = seconds(&m, "timeout", default: 10)
                let rateLimit = rate(&m)
                let connections = connections(&m, default: Receiver.Webhook.defaultConnections)
                if let url, let name {
                    if let u = URL(string: url.value), let scheme = u.scheme, ["http", "https"].contains(scheme),
                        u.host != nil
                    {
                        result = .webhook(
                            .init(
                                name: name, url: url, preset: preset, template: template, headers: headers,
                                hmacSecret: hmac,
                                timeout: timeout, rateLimit: rateLimit, connections: connections))
                    } else {
                        file.error(
                            m.value("url") ?? m.value("url_file") ?? node,
                            "\(what): url must be an http:// or https:// URL")
                    }
                }
            case "email":
                let smtpNode = m.required("smtp_url", what: what)
                let smtp = smtpNode.flatMap { file.string($0, what: "smtp_url") }.flatMap {
                    expand($0, node: smtpNode!, what: "smtp_url")
                }
                if let smtp, !(smtp.hasPrefix("smtp://") || smtp.hasPrefix("smtps://")) {
                    file.error(smtpNode, "smtp_url must start with smtp:// or smtps://")
                }
                var starttls = Receiver.Email.StartTLS.opportunistic
                if let n = m.value("starttls"), let s = file.string(n, what: "starttls") {
                    if let v = Receiver.Email.StartTLS(rawValue: s) {
                        starttls = v
                    } else {
                        file.error(n, "starttls must be required, opportunistic or off, not \"\(s)\"")
                    }
                }
                let username = m.value("username").flatMap { file.string($0, what: "username") }
                let password = secret(&m, "password", required: false, what: what)
                let from = m.required("from", what: what).flatMap { file.string($0, what: "from") }
                let toNode = m.required("to", what: what)
                let to = toNode.flatMap { n in
                    n.scalar != nil ? file.string(n, what: "to").map { [$0] } : file.stringList(n, what: "to")
                }
                if let to, to.isEmpty { file.error(toNode, "to lists no address") }
                let subject = template(&m, "subject", what: what)
                let text = template(&m, "text", what: what)
                let html = template(&m, "html", what: what, escapedAs: "HTML")
                let timeout = seconds(&m, "timeout", default: 30)
                let rateLimit = rate(&m)
                let connections = connections(&m, default: Receiver.Email.defaultConnections)
                if let name, let smtp, let from, let to {
                    result = .email(
                        .init(
                            name: name, smtpURL: smtp, starttls: starttls, username: username, password: password,
                            from: from,
                            to: to, subject: subject, text: text, html: html, timeout: timeout, rateLimit: rateLimit,
                            connections: connections))
                }
            default:
                var format = StdoutNotifier.Format.text
                if let n = m.value("format"), let s = file.string(n, what: "format") {
                    if let f = StdoutNotifier.Format(rawValue: s) {
                        format = f
                    } else {
                        file.error(n, "format must be text or json, not \"\(s)\"")
                    }
                }
                if let name { result = .stdout(.init(name: name, format: format)) }
            }
            m.rejectUnknown(known: ConfigKeys.receiver + keys, what: what)
        } else {
            if let type { file.error(typeNode, "type must be webhook, email or stdout, not \"\(type)\"") }
            m.markAllUsed()
        }
        return file.diagnostics.items.count == before ? result : nil
    }

    func route(_ node: Node, references: inout [(name: String, path: String, line: Int, column: Int, what: String)])
        -> Route?
    {
        guard var m = file.map(node, what: "a route") else { return nil }
        var route = Route()
        // Until the config's own `notify_max_age` is known (-1: the config's).
        route.notifyMaxAge = -1
        if let n = m.value("notify_max_age"), let v = file.duration(n, what: "notify_max_age") {
            if v < 0 { file.error(n, "notify_max_age must be 0s (no limit) or longer") } else { route.notifyMaxAge = v }
        }
        if let n = m.value("match"), var mm = file.map(n, what: "match") {
            for key in ["rule", "severity", "station", "metric", "level"] {
                if let v = mm.value(key), let s = file.string(v, what: "match.\(key)") {
                    do {
                        route.matchers.append(
                            try Matcher(
                                name: key, op: s.hasPrefix("~") ? .regex : .equal,
                                value: s.hasPrefix("~") ? String(s.dropFirst()) : s))
                    } catch {
                        // The reason (RE2 syntax, position, size) comes from the matcher.
                        file.error(v, "match.\(key): \"\(s)\" is not a valid regular expression (\(error))")
                    }
                }
            }
            if let v = mm.value("labels"), let labels = file.stringMap(v, what: "match.labels") {
                for (k, value) in labels.sorted(by: { $0.key < $1.key }) {
                    if let matcher = try? Matcher(name: k, op: .equal, value: value) {
                        route.matchers.append(matcher)
                    } else {
                        file.error(v, "match.labels: \"\(k)\" is not a valid label name")
                    }
                }
            }
            mm.rejectUnknown(known: ConfigKeys.routeMatch, what: "match")
        }
        if let n = m.required("receivers", what: "the route"), let names = file.stringList(n, what: "receivers") {
            route.receivers = names
            for name in names {
                references.append((name, file.path, n.mark?.line ?? 1, n.mark?.column ?? 1, "a route's receivers"))
            }
        }
        if let n = m.value("group_by"), let v = file.stringList(n, what: "group_by") { route.groupBy = v }
        if let n = m.value("group_wait"), let v = file.duration(n, what: "group_wait") { route.groupWait = v }
        if let n = m.value("group_interval"), let v = file.duration(n, what: "group_interval") {
            route.groupInterval = v
        }
        if let n = m.value("repeat_interval"), let v = file.duration(n, what: "repeat_interval") {
            if v <= 0 { file.error(n, "repeat_interval must be longer than 0s") } else { route.repeatInterval = v }
        }
        if let n = m.value("send_resolved"), let v = file.bool(n, what: "send_resolved") { route.sendResolved = v }
        if let n = m.value("continue"), let v = file.bool(n, what: "continue") { route.continue = v }
        if let n = m.value("quiet_hours") { route.quietHours = quietHours(n) }
        let afterNode = m.value("escalate_after")
        let toNode = m.value("escalate_to")
        if let n = afterNode, let v = file.duration(n, what: "escalate_after") {
            if v <= 0 { file.error(n, "escalate_after must be longer than 0s") } else { route.escalateAfter = v }
        }
        if let n = toNode, let name = file.string(n, what: "escalate_to") {
            route.escalateTo = name
            references.append((name, file.path, n.mark?.line ?? 1, n.mark?.column ?? 1, "a route's escalate_to"))
        }
        if (afterNode == nil) != (toNode == nil) {
            file.error(afterNode ?? toNode, "give escalate_after and escalate_to together")
        }
        m.rejectUnknown(known: ConfigKeys.route, what: "a route")
        return route
    }

    func quietHours(_ node: Node) -> QuietHours? {
        guard var m = file.map(node, what: "quiet_hours") else { return nil }
        let tzNode = m.required("timezone", what: "quiet_hours")
        let tzName = tzNode.flatMap { file.string($0, what: "timezone") }
        let zone = tzName.flatMap { TimeZone(identifier: $0) }
        if let tzName, zone == nil {
            file.error(tzNode, "timezone \"\(tzName)\" is not an IANA time zone (like America/Chicago)")
        }
        func clock(_ key: String) -> Int? {
            guard let n = m.required(key, what: "quiet_hours"), let s = file.string(n, what: key) else { return nil }
            guard let v = QuietHours.minutes(s) else {
                file.error(n, "\(key) must be a time like \"22:00\", not \"\(s)\"")
                return nil
            }
            return v
        }
        let from = clock("from")
        let to = clock("to")
        var days = Set(QuietHours.Weekday.allCases)
        if let n = m.value("days"), let list = file.stringList(n, what: "days") {
            days = []
            for d in list {
                if let day = QuietHours.Weekday(name: d) {
                    days.insert(day)
                } else {
                    file.error(n, "days: \"\(d)\" is not a weekday (mon … sun)")
                }
            }
        }
        var policy = QuietHours.Policy.defer
        if let n = m.value("policy"), let s = file.string(n, what: "policy") {
            if let p = QuietHours.Policy(rawValue: s) {
                policy = p
            } else {
                file.error(n, "policy must be defer or drop, not \"\(s)\"")
            }
        }
        var bypass: Severity? = nil
        if let n = m.value("bypass_severity"), let s = file.string(n, what: "bypass_severity") {
            if let v = Severity(rawValue: s) {
                bypass = v
            } else {
                file.error(n, "bypass_severity must be info, warning or critical, not \"\(s)\"")
            }
        }
        m.rejectUnknown(known: ConfigKeys.quietHours, what: "quiet_hours")
        guard let zone, let from, let to else { return nil }
        return QuietHours(timeZone: zone, from: from, to: to, days: days, policy: policy, bypassSeverity: bypass)
    }
}
