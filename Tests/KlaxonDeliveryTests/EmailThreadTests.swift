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
        #expect(root["Message-ID"] == "<alert-41@example.org>")
        #expect(root["In-Reply-To"] == nil && root["References"] == nil)
        let reply = Dictionary(changed.headers.map { ($0[0], $0[1]) }, uniquingKeysWith: { a, _ in a })
        #expect(reply["Message-ID"] == "<k2@example.org>")
        #expect(reply["In-Reply-To"] == "<alert-41@example.org>")
        #expect(reply["References"] == "<alert-41@example.org>")
        #expect(firing.defects.isEmpty && changed.defects.isEmpty)
        // A test message (no id) and a group of several alerts start no thread.
        let test = try await EmailHeaderTests.parse(try message(transition(), id: 0, key: "k3"))
        #expect(!test.headers.contains { $0[0] == "References" })
    }
}
