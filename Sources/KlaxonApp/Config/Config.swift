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
    /// Each receiver's `budget:` (issue 41, no storms); a receiver without one has no budget.
    public var budgets: [String: Budget] = [:]
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
    /// The secret token Telegram sends with the bot's updates (`chat.telegram.secret_token`).
    public var telegramSecretToken: Secret?
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
    /// What people may watch from chat (`watches:`, issue 43).
    public var watches = WatchSettings()
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
        "notify_max_age", "external_url", "watches",
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
            // One reader per top-level section, in this order (the order their errors are listed in).
            if let n = m.value("database") { config.store = reader.database(n) }
            if let n = m.value("rules") { config.rules = reader.rules(n) }
            if let n = m.value("admins") { config.admins = file.stringList(n, what: "admins") ?? [] }
            if let n = m.value("listen") { config.loadListen(n, reader) }
            if let n = m.value("chat") { config.loadChat(n, reader) }
            if let n = m.value("api") { config.loadAPI(n, reader) }
            if let n = m.value("retention") { config.retention = reader.retention(n) }
            if let n = m.value("site") { config.loadSite(n, reader) }
            if let n = m.value("readings") { config.loadReadings(n, reader) }
            if let n = m.value("give_up_after") { config.loadGiveUpAfter(n, reader) }
            if let n = m.value("delivery_lease") { config.loadDeliveryLease(n, reader) }
            if let n = m.value("receivers") { config.loadReceivers(n, reader) }
            if let n = m.value("sources") { config.loadSources(n, reader) }
            if let n = m.value("routes") { config.loadRoutes(n, reader) }
            if let n = m.value("watches") { config.loadWatches(n, reader) }
            config.loadNotifyMaxAge(m.value("notify_max_age"), reader)
            if let n = m.value("external_url") { config.loadExternalURL(n, reader) }
            for key in ["default_receiver", "fallback_receiver"] {
                if let n = m.value(key) { config.loadReceiverName(key, n, reader) }
            }
            m.rejectUnknown(known: keys, what: "the config")
            config.checkReferences(into: diagnostics)
        }
        config.warnings = diagnostics.warnings
        return config
    }

    /// ` (receivers are a, b)`, for messages about receiver names.
    public var knownReceivers: String {
        declaredReceivers.isEmpty
            ? " (no receivers are defined)" : " (receivers are \(declaredReceivers.sorted().joined(separator: ", ")))"
    }

    /// `FILE:LINE:COL` of a rule's origin, split (the whole origin and 1:1 when it has no position).
    static func position(_ origin: String) -> (String, Int, Int) {
        let parts = origin.split(separator: ":")
        guard parts.count >= 3 else { return (origin, 1, 1) }
        return (
            parts.dropLast(2).joined(separator: ":"), Int(parts[parts.count - 2]) ?? 1, Int(parts[parts.count - 1]) ?? 1
        )
    }

    /// Cross-checks rules against the config: every `notify` must name a defined receiver.
    public func check(rules: [Rule]) -> [Diagnostic] {
        var out: [Diagnostic] = []
        for rule in rules {
            // People's watches (issue 43) own the `watch-` names and the `watch` label: a rule file's
            // rule with either would be routed as a person's watch, to its `notify` alone.
            if rule.name.hasPrefix("watch-") || rule.labels[Routing.watchLabel] != nil {
                let (path, line, column) = Self.position(rule.origin)
                out.append(
                    Diagnostic(
                        path: path, line: line, column: column,
                        message:
                            "rule \"\(rule.name)\": the name prefix watch- and the label watch are kept for people's watches"
                    ))
            }
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

    /// `rules:`: a file or folder, or a list of them, relative to the config's folder.
    func rules(_ n: Node) -> [String]? {
        n.scalar != nil
            ? file.string(n, what: "rules").map { [resolve($0)] } : file.stringList(n, what: "rules")?.map(resolve)
    }

    static let receiverKeys: [String: [String]] = [
        "webhook": [
            "url", "url_file", "preset", "template", "headers", "hmac_secret", "hmac_secret_file", "timeout",
            "rate_limit", "connections", "bot_token", "bot_token_file", "channel", "thread_replies",
        ],
        "email": [
            "smtp_url", "starttls", "username", "password", "password_file", "from", "to", "subject", "text", "html",
            "timeout",
            "rate_limit", "connections",
        ],
        "stdout": ["format"],
        "matrix": ["url", "access_token", "access_token_file", "room_id", "timeout", "rate_limit", "connections"],
        "ntfy": ["url", "topic", "token", "token_file", "timeout", "rate_limit", "connections"],
        "telegram": [
            "bot_token", "bot_token_file", "chat_id", "url", "buttons", "timeout", "rate_limit", "connections",
        ],
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
        // `edit:` on every receiver: false turns living messages off, whatever the platform.
        let edit = m.value("edit").flatMap { file.bool($0, what: "edit") } ?? true
        // `budget:` on every receiver: read by `budget(_:)`.
        _ = m.value("budget")
        var result: Receiver? = nil
        if let type, let keys = Self.receiverKeys[type] {
            switch type {
            case "webhook":
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
                let app = chatApp(&m, preset: preset, node: node, what: what)
                // A Slack app's `url` is the Web API's base, Slack's own unless it is given.
                let url =
                    app.token != nil && preset == .slack && m.value("url") == nil && m.value("url_file") == nil
                    ? Secret(SlackWebAPI.defaultBase) : secret(&m, "url", required: true, what: what)
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
                                timeout: timeout, rateLimit: rateLimit, connections: connections, edit: edit,
                                botToken: app.token, channel: app.channel, threadReplies: app.threadReplies))
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
            case "telegram":
                result = telegram(&m, name: name, node: node, what: what, edit: edit)
            case "matrix":
                result = matrix(&m, name: name, node: node, what: what, edit: edit)
            case "ntfy":
                result = ntfy(&m, name: name, node: node, what: what, edit: edit)
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
            if let type {
                file.error(typeNode, "type must be webhook, email, stdout, telegram, matrix or ntfy, not \"\(type)\"")
            }
            m.markAllUsed()
        }
        return file.diagnostics.items.count == before ? result : nil
    }

    /// `type: telegram`: `bot_token` (or `bot_token_file`) and `chat_id` required; `url` the Bot
    /// API's base (Telegram's unless given); `buttons` for the Ack and Silence 1h inline buttons.
    func telegram(_ m: inout YAMLMap, name: String?, node: Node, what: String, edit: Bool) -> Receiver? {
        let token = secret(&m, "bot_token", required: true, what: what)
        if let token, !TelegramBotAPI.isToken(token.value) {
            file.error(
                m.value("bot_token") ?? m.value("bot_token_file") ?? node,
                "\(what): bot_token is not a Telegram bot token (digits, a colon, then 30 to 50 letters, digits, - or _)"
            )
        }
        let chatNode = m.required("chat_id", what: what)
        let chat = chatNode.flatMap { file.string($0, what: "chat_id") }
        if let chat, !TelegramBotAPI.isChatID(chat) {
            file.error(chatNode, "\(what): chat_id must be a chat's id (-1001234567890) or @channelusername")
        }
        var base = TelegramBotAPI.defaultBase
        if let n = m.value("url"), let u = file.string(n, what: "url") {
            if let c = URLComponents(string: u), ["http", "https"].contains(c.scheme ?? ""), c.host != nil,
                c.query == nil, c.user == nil
            {
                base = u
            } else {
                file.error(n, "\(what): url must be the Bot API's http:// or https:// base URL")
            }
        }
        let buttons = m.value("buttons").flatMap { file.bool($0, what: "buttons") } ?? false
        let timeout = seconds(&m, "timeout", default: 10)
        let rateLimit = rate(&m)
        let connections = connections(&m, default: Receiver.Telegram.defaultConnections)
        guard let name, let token, let chat else { return nil }
        return .telegram(
            .init(
                name: name, token: token, chatID: chat, url: base, timeout: timeout, rateLimit: rateLimit,
                connections: connections, edit: edit, buttons: buttons))
    }

    /// `type: ntfy`: `topic` required; `url` the server's base (ntfy.sh unless given); `token` optional.
    func ntfy(_ m: inout YAMLMap, name: String?, node: Node, what: String, edit: Bool) -> Receiver? {
        let token = secret(&m, "token", required: false, what: what)
        var base = Receiver.Ntfy.defaultBase
        if let n = m.value("url"), let u = file.string(n, what: "url") {
            if let c = URLComponents(string: u), ["http", "https"].contains(c.scheme ?? ""), c.host != nil,
                c.query == nil, c.user == nil
            {
                base = u
            } else {
                file.error(n, "\(what): url must be the ntfy server's http:// or https:// base URL")
            }
        }
        let topicNode = m.required("topic", what: what)
        let topic = topicNode.flatMap { file.string($0, what: "topic") }
        if let topic, !NtfyNotifier.isSequenceID(topic) {
            file.error(topicNode, "\(what): topic must be 1 to 64 of A-Z, a-z, 0-9, _ and - (ntfy's rule)")
        }
        let timeout = seconds(&m, "timeout", default: 10)
        let rateLimit = rate(&m)
        let connections = connections(&m, default: Receiver.Ntfy.defaultConnections)
        guard let name, let topic else { return nil }
        return .ntfy(
            .init(
                name: name, url: base, topic: topic, token: token, timeout: timeout, rateLimit: rateLimit,
                connections: connections, edit: edit))
    }

    /// `type: matrix`: the homeserver's `url`, `access_token` (or `access_token_file`) and `room_id`.
    func matrix(_ m: inout YAMLMap, name: String?, node: Node, what: String, edit: Bool) -> Receiver? {
        let token = secret(&m, "access_token", required: true, what: what)
        var base: String?
        if let n = m.required("url", what: what), let u = file.string(n, what: "url") {
            if let c = URLComponents(string: u), ["http", "https"].contains(c.scheme ?? ""), c.host != nil,
                c.query == nil, c.user == nil
            {
                base = u
            } else {
                file.error(n, "\(what): url must be the homeserver's http:// or https:// base URL")
            }
        }
        let roomNode = m.required("room_id", what: what)
        let room = roomNode.flatMap { file.string($0, what: "room_id") }
        if let room, !MatrixClient.isRoomID(room) {
            file.error(roomNode, "\(what): room_id must be a room id (!opaque:example.org), not an alias")
        }
        let timeout = seconds(&m, "timeout", default: 10)
        let rateLimit = rate(&m)
        let connections = connections(&m, default: Receiver.Matrix.defaultConnections)
        guard let name, let token, let base, let room else { return nil }
        return .matrix(
            .init(
                name: name, url: base, token: token, roomID: room, timeout: timeout, rateLimit: rateLimit,
                connections: connections, edit: edit))
    }

    /// A chat receiver's app mode: `bot_token` (or `bot_token_file`), the `channel` it posts to and
    /// Slack's `thread_replies`; only the Slack and Mattermost presets have one.
    func chatApp(_ m: inout YAMLMap, preset: Receiver.Webhook.Preset, node: Node, what: String) -> (
        token: Secret?, channel: String?, threadReplies: Bool
    ) {
        let token = secret(&m, "bot_token", required: false, what: what)
        let channel = m.value("channel").flatMap { file.string($0, what: "channel") }
        let threadNode = m.value("thread_replies")
        let threadReplies = threadNode.flatMap { file.bool($0, what: "thread_replies") } ?? false
        guard token != nil || channel != nil || threadNode != nil else { return (nil, nil, false) }
        guard preset == .slack || preset == .mattermost else {
            file.error(
                m.value("bot_token") ?? m.value("bot_token_file") ?? m.value("channel") ?? threadNode ?? node,
                "\(what): bot_token, channel and thread_replies are for preset slack or mattermost")
            return (nil, nil, false)
        }
        if token == nil { file.error(node, "\(what): channel and thread_replies need bot_token or bot_token_file") }
        guard let channel, !channel.isEmpty else {
            if token != nil { file.error(node, "\(what): bot_token needs the channel to post to (channel: ID)") }
            return (nil, nil, false)
        }
        let valid =
            preset == .slack
            ? SlackWebAPI.MessageRef.isChannel(channel) || channel.hasPrefix("#") && channel.count <= 81
            : MattermostAPI.isID(channel)
        if !valid {
            file.error(
                m.value("channel") ?? node,
                preset == .slack
                    ? "\(what): channel must be a Slack channel id (C0123ABCD) or #name"
                    : "\(what): channel must be a Mattermost channel id (26 lower-case letters and digits)")
        }
        if threadReplies && preset != .slack {
            file.error(threadNode ?? node, "\(what): thread_replies is for preset slack")
        }
        return (token, channel, threadReplies)
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
