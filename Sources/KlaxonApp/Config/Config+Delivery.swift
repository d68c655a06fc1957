import Foundation
import KlaxonCore
import KlaxonDelivery
import Yams

/// The delivery sections of `klaxon.yaml`: `receivers`, `routes` and their defaults (`notify_max_age`,
/// `default_receiver`, `fallback_receiver`), how long a notification is tried (`give_up_after`,
/// `delivery_lease`), the links in messages (`external_url`); and `sources`.
extension Config {
    /// `give_up_after: DURATION`.
    mutating func loadGiveUpAfter(_ n: Node, _ reader: ConfigReader) {
        if let d = reader.file.duration(n, what: "give_up_after") { giveUpAfter = d }
    }

    /// `delivery_lease: DURATION`, 5 s to 1 h.
    mutating func loadDeliveryLease(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard let d = file.duration(n, what: "delivery_lease") else { return }
        if (5...3600).contains(d) {
            deliveryLease = d
        } else {
            file.error(n, "delivery_lease must be from 5s to 1h, not \(DurationText.format(d))")
        }
    }

    /// `receivers: [...]`: every name is declared, even a receiver whose other keys have errors.
    mutating func loadReceivers(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard let items = file.list(n, what: "receivers") else { return }
        for item in items {
            if let name = item.mapping?["name"]?.scalar?.string { declaredReceivers.insert(name) }
            guard let r = reader.receiver(item) else { continue }
            if receivers.contains(where: { $0.name == r.name }) {
                file.error(item, "receiver name \"\(r.name)\" is used twice")
            } else {
                receivers.append(r)
                if let b = reader.budget(item) { budgets[r.name] = b }
            }
        }
    }

    /// `sources: [...]`.
    mutating func loadSources(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard let items = file.list(n, what: "sources") else { return }
        for item in items {
            guard let source = reader.source(item) else { continue }
            if sources.contains(where: { $0.source.name == source.source.name }) {
                file.error(item, "source name \"\(source.source.name)\" is used twice")
            } else {
                sources.append(source)
            }
        }
    }

    /// `routes: [...]`.
    mutating func loadRoutes(_ n: Node, _ reader: ConfigReader) {
        guard let items = reader.file.list(n, what: "routes") else { return }
        routing.routes = items.compactMap { reader.route($0, references: &references) }
    }

    /// `notify_max_age: DURATION` (nil: absent), then handed to the routes that set none of their own.
    mutating func loadNotifyMaxAge(_ n: Node?, _ reader: ConfigReader) {
        if let n, let v = reader.file.duration(n, what: "notify_max_age") {
            if v < 0 {
                reader.file.error(n, "notify_max_age must be 0s (no limit) or longer")
            } else {
                notifyMaxAge = v
            }
        }
        routing.defaults.notifyMaxAge = notifyMaxAge
        for i in routing.routes.indices where routing.routes[i].notifyMaxAge < 0 {
            routing.routes[i].notifyMaxAge = notifyMaxAge
        }
    }

    /// `external_url: URL`, kept without its trailing slashes.
    mutating func loadExternalURL(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard let url = file.string(n, what: "external_url") else { return }
        if let problem = Self.externalURLProblem(url) {
            file.error(n, "external_url \"\(String(url.prefix(200)))\" \(problem)")
        } else {
            var u = url
            while u.hasSuffix("/") { u.removeLast() }
            externalURL = u
        }
    }

    /// `default_receiver` or `fallback_receiver` (`key`): a receiver name, checked once every
    /// receiver is declared (`checkReferences`).
    mutating func loadReceiverName(_ key: String, _ n: Node, _ reader: ConfigReader) {
        guard let name = reader.file.string(n, what: key) else { return }
        if key == "default_receiver" {
            routing.defaultReceiver = name
        } else {
            fallbackReceiver = name
        }
        references.append((name, reader.file.path, n.mark?.line ?? 1, n.mark?.column ?? 1, key))
    }

    /// Every receiver name used (routes, escalations, the default and the fallback) names a declared one.
    func checkReferences(into diagnostics: Diagnostics) {
        for ref in references where !declaredReceivers.contains(ref.name) {
            diagnostics.add(
                Diagnostic(
                    path: ref.path, line: ref.line, column: ref.column,
                    message: "\(ref.what) names undefined receiver \"\(ref.name)\"\(knownReceivers)"))
        }
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
}

extension ConfigReader {
    /// A receiver's `budget: {messages: N, per: DURATION}` (nil: none, or an error reported).
    func budget(_ receiver: Node) -> Budget? {
        guard let n = receiver.mapping?["budget"], var m = file.map(n, what: "budget") else { return nil }
        let messages = m.required("messages", what: "budget").flatMap { file.integer($0, what: "budget.messages") }
        let per = m.required("per", what: "budget").flatMap { file.duration($0, what: "budget.per") }
        m.rejectUnknown(known: ConfigKeys.receiverBudget, what: "budget")
        guard let messages, let per else { return nil }
        guard Budget.messageRange.contains(messages) else {
            file.error(m.value("messages") ?? n, "budget.messages must be from 1 to 10000, not \(messages)")
            return nil
        }
        guard Budget.perRange.contains(per) else {
            file.error(m.value("per") ?? n, "budget.per must be from 1s to 7d, not \(DurationText.format(per))")
            return nil
        }
        return Budget(messages: messages, per: per)
    }
}
