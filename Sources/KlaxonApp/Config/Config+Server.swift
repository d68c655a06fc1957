import Foundation
import KlaxonCore
import KlaxonServer
import Yams

/// The sections of `klaxon.yaml` the HTTP server reads: `listen`, `api`, `site` and `readings`.
extension Config {
    /// `listen: HOST:PORT`.
    mutating func loadListen(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard let l = file.string(n, what: "listen") else { return }
        let parts = l.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 2, !parts[0].isEmpty, let port = Int(parts[1]), (0...65535).contains(port) {
            listen = (String(parts[0]), port)
        } else {
            file.error(n, "listen must be HOST:PORT like 127.0.0.1:9464, not \"\(l)\"")
        }
    }

    /// `api: {token | token_file, owners: [{owner, token | token_file}], max_push_bytes}`.
    mutating func loadAPI(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard var am = file.map(n, what: "api") else { return }
        apiToken = reader.secret(&am, "token", required: true, what: "api")
        if let on = am.value("owners"), let items = file.list(on, what: "api.owners") {
            for item in items {
                guard var om = file.map(item, what: "an owner") else { continue }
                let owner = om.required("owner", what: "the owner").flatMap { file.string($0, what: "owner") }
                let token = reader.secret(&om, "token", required: true, what: "api.owners")
                om.rejectUnknown(known: ConfigKeys.apiOwner, what: "an owner")
                if let owner, let token { ownerTokens[owner] = token }
            }
        }
        if let bn = am.value("max_push_bytes"), let v = file.integer(bn, what: "api.max_push_bytes") {
            if (1_024...(256 << 20)).contains(v) {
                maxPushBytes = v
            } else {
                file.error(bn, "api.max_push_bytes must be between 1024 and 268435456 (256 MiB), not \(v)")
            }
        }
        am.rejectUnknown(known: ConfigKeys.api, what: "api")
    }

    /// `site: {enabled, refresh, time_zone, secret | secret_file, hosts}`.
    mutating func loadSite(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard var sm = file.map(n, what: "site") else { return }
        if let en = sm.value("enabled"), let v = file.bool(en, what: "site.enabled") { site.enabled = v }
        if let rn = sm.value("refresh"), let d = reader.siteRefresh(rn) {
            if (0...86_400).contains(d) && (d == 0 || d >= 5) {
                site.refresh = Int(d)
            } else {
                file.error(rn, "site.refresh must be 0 (off) or between 5s and 24h")
            }
        }
        if let zn = sm.value("time_zone"), let name = file.string(zn, what: "site.time_zone") {
            if let zone = TimeZone(identifier: name) {
                site.timeZone = zone
            } else {
                file.error(
                    zn, "site.time_zone: unknown time zone \"\(name)\" (an IANA name such as America/Chicago)")
            }
        }
        let secretNode = sm.value("secret") ?? sm.value("secret_file") ?? sm.node
        if let secret = reader.secret(&sm, "secret", required: false, what: "site") {
            if secret.value.utf8.count >= 32 {
                site.secret = secret
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
            site.hosts = names
        }
        sm.rejectUnknown(known: ConfigKeys.site, what: "site")
    }

    /// `readings: {max_future}`.
    mutating func loadReadings(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard var rm = file.map(n, what: "readings") else { return }
        if let fn = rm.value("max_future"), let d = file.duration(fn, what: "readings.max_future") {
            if (0...FutureBound.maximumMargin).contains(d) {
                futureBound = FutureBound(margin: d)
            } else {
                file.error(fn, "readings.max_future must be from 0s to 366d, not \(DurationText.format(d))")
            }
        }
        rm.rejectUnknown(known: ConfigKeys.readings, what: "readings")
    }
}
