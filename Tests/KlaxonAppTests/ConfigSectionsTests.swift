import Foundation
import KlaxonApp
import Testing

/// `Config.load` reads each top-level section in a function of its own (issue 40): a config with a
/// mistake in every section gives the same errors, in the same order, at the same positions as the
/// one long function did (the list below is what it gave, unsorted: the order the daemon's reload
/// logs them in; `klaxon check` sorts them by position).
@Suite("config: one reader per section")
struct ConfigSectionsTests {
    static let config = """
        database: {url: "mysql://x", extra: 1}
        rules: 5
        admins: [1, [2]]
        listen: "nohost"
        chat:
          slack: {signing_secret: "s", response_url_prefix: "ftp://x/"}
          mattermost: {}
          users: [a]
          may_act: [" "]
          bogus: 1
        api:
          owners: [{owner: a}]
          max_push_bytes: 1
          toke: x
        retention: {readings: forever}
        site:
          enabled: maybe
          refresh: 2s
          time_zone: Mars/Base
          secret: short
          hosts: ["a b"]
          colour: red
        readings: {max_future: 400d, extra: 1}
        give_up_after: soon
        delivery_lease: 1s
        receivers:
          - {name: a, type: webhook, url: "ftp://x"}
          - {name: d, type: stdout}
          - {name: d, type: stdout}
          - {name: b, type: pager}
          - {name: c, type: email, smtp_url: "http://x", from: f, to: []}
        sources:
          - {name: s, kind: nope}
          - 7
        routes:
          - {receivers: [zz], match: {rule: "~("}, repeat_interval: 0s, escalate_after: 1m}
          - {receivers: [a], quiet_hours: {timezone: X/Y, from: "25:00", to: "07:00", days: [funday]}}
        notify_max_age: -1s
        external_url: "http://x/?q=1"
        default_receiver: nobody
        fallback_receiver: [x]
        unknown_top: 1
        """

    static let expected = [
        "1:30: unknown key \"extra\" in database",
        "1:17: database.url must be a postgres:// URL (give a SQLite file as database: PATH)",
        "3:13: each item of admins must be a string",
        "4:9: listen must be HOST:PORT like 127.0.0.1:9464, not \"nohost\"",
        "6:53: chat.slack.response_url_prefix \"ftp://x/\" must be an absolute http:// or https:// URL with a host",
        "7:15: chat.mattermost needs token or token_file",
        "8:10: chat.users must be a mapping of keys to values",
        "9:12: chat.may_act: \" \" is not a chat id or an owner name",
        "10:3: unknown key \"bogus\" in chat",
        "12:3: api needs token or token_file",
        "12:12: api.owners needs token or token_file",
        "13:19: api.max_push_bytes must be between 1024 and 268435456 (256 MiB), not 1",
        "14:3: unknown key \"toke\" in api (did you mean \"token\"?)",
        "17:12: site.enabled must be true or false, not \"maybe\"",
        "18:12: site.refresh must be 0 (off) or between 5s and 24h",
        "19:14: site.time_zone: unknown time zone \"Mars/Base\" (an IANA name such as America/Chicago)",
        "20:11: site.secret must be at least 32 characters (it signs sign-in cookies)",
        "21:11: site.hosts: \"a b\" is not a host name (letters, digits, '-', '.', '_'; no port or scheme), or \"*\" for any",
        "22:3: unknown key \"colour\" in site",
        "23:24: readings.max_future must be from 0s to 366d, not 400d",
        "23:30: unknown key \"extra\" in readings",
        "24:16: give_up_after must be a duration like 30s, 15m, 6h or 2d, not \"soon\"",
        "25:17: delivery_lease must be from 5s to 1h, not 1s",
        "27:35: receiver \"a\": url must be an http:// or https:// URL",
        "29:5: receiver name \"d\" is used twice",
        "30:21: type must be webhook, email, stdout, telegram, matrix or ntfy, not \"pager\"",
        "31:38: smtp_url must start with smtp:// or smtps://",
        "31:63: to lists no address",
        "33:21: unknown source kind \"nope\" (kinds are airnow, aqi-websocket, cwms, http-json, nwps, nws-alerts, nws-observations, open-meteo, openaq, owm, usgs-iv, usgs-ogc, usgs-quakes, waqi)",
        "34:5: a source must be a mapping of keys to values",
        "36:37: match.rule: \"~(\" is not a valid regular expression (matcher rule=~(: missing closing `)` for the group at character 1)",
        "36:61: repeat_interval must be longer than 0s",
        "36:81: give escalate_after and escalate_to together",
        "37:46: timezone \"X/Y\" is not an IANA time zone (like America/Chicago)",
        "37:57: from must be a time like \"22:00\", not \"25:00\"",
        "37:85: days: \"funday\" is not a weekday (mon … sun)",
        "38:17: notify_max_age must be a duration like 30s, 15m, 6h or 2d, not \"-1s\"",
        "39:15: external_url \"http://x/?q=1\" must not have a query or fragment",
        "41:20: fallback_receiver must be a string",
        "42:1: unknown key \"unknown_top\" in the config",
        "36:17: a route's receivers names undefined receiver \"zz\" (receivers are a, b, c, d)",
        "40:19: default_receiver names undefined receiver \"nobody\" (receivers are a, b, c, d)",
    ]

    @Test("a mistake in every section: the same errors, order and positions as before the split")
    func everySection() throws {
        let scratch = try Scratch()
        let path = try scratch.write("klaxon.yaml", Self.config)
        let diagnostics = Diagnostics()
        _ = Config.load(path: path, environment: [:], diagnostics: diagnostics)
        #expect(diagnostics.items.allSatisfy { $0.path == path })
        let got = diagnostics.items.map { "\($0.line):\($0.column): \($0.message)" }
        #expect(got == Self.expected, "\(got.joined(separator: "\n"))")
    }
}
