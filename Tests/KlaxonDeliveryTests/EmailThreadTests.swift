import Foundation
import KlaxonCore
import KlaxonDelivery
import Testing

/// Every message of one alert episode names the same thread (`In-Reply-To`, `References`), read back
/// by Python's `email` package.
@Suite struct EmailThreadTests {
    @Test func anEpisodesMessagesShareOneThread() async throws {
        let config = Receiver.Email(
            name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "Klaxon <klaxon@example.org>", to: ["ops@example.org"])
        let notifier = try EmailNotifier(config: config)
        func message(_ t: Transition, id: Int64, key: String) throws -> String {
            try notifier.render(
                AlertNotification(
                    key: key, receiver: "mail", alerts: [NotifiedAlert(transition: t, message: "m", id: id)]))
        }
        let firing = try await EmailHeaderTests.parse(try message(transition(state: .firing), id: 41, key: "k1"))
        let changed = try await EmailHeaderTests.parse(
            try message(transition(state: .changed, level: "moderate", from: "minor"), id: 41, key: "k2"))
        // The episode's first message is the thread's root; every later one answers it, under the
        // same subject (the headline the episode opened with).
        let root = Dictionary(firing.headers.map { ($0[0], $0[1]) }, uniquingKeysWith: { a, _ in a })
        #expect(root["Message-ID"] == "<alert-41.mail@example.org>")
        #expect(root["In-Reply-To"] == nil && root["References"] == nil)
        let reply = Dictionary(changed.headers.map { ($0[0], $0[1]) }, uniquingKeysWith: { a, _ in a })
        #expect(reply["Message-ID"] == "<k2@example.org>")
        #expect(reply["In-Reply-To"] == "<alert-41.mail@example.org>")
        #expect(reply["References"] == "<alert-41.mail@example.org>")
        #expect(firing.defects.isEmpty && changed.defects.isEmpty)
        // A test message (no id) and a group of several alerts start no thread.
        let test = try await EmailHeaderTests.parse(try message(transition(), id: 0, key: "k3"))
        #expect(!test.headers.contains { $0[0] == "References" })
    }

    /// Two email receivers that mail one mailbox, each with its own text (issue 38, item 11): each
    /// message has a `Message-ID` of its own, and each receiver's later messages answer its own root.
    @Test func twoReceiversNeverShareAMessageID() async throws {
        func notifier(_ name: String, subject: String) throws -> EmailNotifier {
            try EmailNotifier(
                config: Receiver.Email(
                    name: name, smtpURL: "smtp://127.0.0.1:1", from: "Klaxon <klaxon@example.org>",
                    to: ["ops@example.org"], subject: subject))
        }
        let names = ["mail", "pager", "Ops Mail ✉", "Ops.Mail", "ops-mail"]
        var roots: [String] = []
        for (i, name) in names.enumerated() {
            let n = try notifier(name, subject: "\(name): {{#alerts}}{{station}}{{/alerts}}")
            func message(_ t: Transition, key: String) async throws -> [String: String] {
                let text = try n.render(
                    AlertNotification(
                        key: key, receiver: name, alerts: [NotifiedAlert(transition: t, message: "m", id: 41)]))
                let parsed = try await EmailHeaderTests.parse(text)
                #expect(parsed.defects.isEmpty, "\(name): \(parsed.defects)")
                return Dictionary(parsed.headers.map { ($0[0], $0[1]) }, uniquingKeysWith: { a, _ in a })
            }
            let root = try await message(transition(state: .firing), key: "k1-\(i)")
            let reply = try await message(transition(state: .resolved), key: "k2-\(i)")
            let id = try #require(root["Message-ID"])
            #expect(id.hasPrefix("<alert-41.") && id.hasSuffix("@example.org>"), "\(id)")
            #expect(reply["In-Reply-To"] == id && reply["References"] == id, "\(name): \(reply)")
            roots.append(id)
        }
        #expect(Set(roots).count == names.count, "\(roots)")
        #expect(roots[0] == "<alert-41.mail@example.org>" && roots[1] == "<alert-41.pager@example.org>")
        // A name that is not letters, digits, - and _ keeps those and a hash of the whole name.
        #expect(roots[2].hasPrefix("<alert-41.OpsMail=") && roots[3].hasPrefix("<alert-41.OpsMail="), "\(roots)")
    }
}
