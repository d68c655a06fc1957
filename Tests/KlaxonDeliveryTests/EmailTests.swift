import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Testing

/// Email through libcurl against a real SMTP server (aiosmtpd) on 127.0.0.1.
@Suite(.serialized) struct EmailTests {
    func email(
        _ server: SMTPServer, starttls: Receiver.Email.StartTLS = .off, user: String? = nil, password: String? = nil
    )
        -> Receiver.Email
    {
        Receiver.Email(
            name: "mail", smtpURL: server.url, starttls: starttls, username: user, password: password.map(Secret.init),
            from: "Klaxon <klaxon@example.org>", to: ["ops@example.org", "Duty <duty@example.org>"])
    }

    @Test func plainMessageIsWellFormed() async throws {
        try await SMTPServer.with { server in try await plainMessageIsWellFormed(server: server) }
    }

    func plainMessageIsWellFormed(server: SMTPServer) async throws {
        let n = notification([transition(station: "Zürich ☔ Limmat")], receiver: "mail", key: "0f1e2d3c-key")
        try await EmailNotifier(config: email(server)).send(n)
        let m = try #require(server.messages().first)
        #expect(m.mailFrom == "klaxon@example.org")
        #expect(m.rcptTos == ["ops@example.org", "duty@example.org"])
        #expect(m.header("From") == "Klaxon <klaxon@example.org>")
        #expect(m.header("To") == "ops@example.org, Duty <duty@example.org>")
        // The first message of an episode is its thread's root (`alert-ID`); the key is its own header.
        #expect(m.header("Message-ID") == "<alert-1.mail@example.org>")
        #expect(m.header("X-Klaxon-Key") == "0f1e2d3c-key")
        #expect(m.header("MIME-Version") == "1.0")
        #expect(m.header("Date").map { HTTPDate.parse($0) != nil } == true)
        // Non-ASCII subjects are RFC 2047 encoded on the wire and decode back exactly.
        let subject = try #require(m.header("Subject"))
        #expect(subject.contains("Zürich ☔ Limmat"))
        let raw = try #require(m.rawHeaders.first { $0.0 == "Subject" }?.1)
        #expect(raw.contains("=?UTF-8?B?"))
        let ascii = raw.unicodeScalars.allSatisfy { $0.isASCII }
        #expect(ascii)
        #expect(m.contentType == "multipart/alternative")
        #expect(m.parts.map(\.contentType) == ["text/plain", "text/html"])
        #expect(m.parts[0].text.contains("Why: gage_height 12.4 ft"))
        #expect(m.parts[0].text.contains("data as of 2026-03-01T06:15:00Z"))
        #expect(m.parts[1].text.contains("<h2"))
        #expect(!m.tls)
    }

    @Test func headerInjectionFromDataIsInert() async throws {
        try await SMTPServer.with { server in try await headerInjectionFromDataIsInert(server: server) }
    }

    func headerInjectionFromDataIsInert(server: SMTPServer) async throws {
        let evil = transition(station: "X\r\nBcc: evil@example.net\r\nX-Evil: 1")
        try await EmailNotifier(config: email(server)).send(notification([evil], receiver: "mail"))
        let m = try #require(server.messages().first)
        #expect(m.header("Bcc") == nil)
        #expect(m.header("X-Evil") == nil)
        #expect(m.rcptTos.count == 2)
        #expect(m.header("Subject")?.contains("X Bcc: evil@example.net X-Evil: 1") == true)
    }

    @Test func startTLSWithASelfSignedCertificate() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let (cert, key) = try SMTPServer.selfSignedCertificate(in: dir)
        var options = SMTPServer.Options()
        options.tlsCert = cert
        options.tlsKey = key
        options.requireStartTLS = true
        try await SMTPServer.with(options) { server in
            try await startTLSWithASelfSignedCertificate(server: server, cert: cert)
        }
    }

    func startTLSWithASelfSignedCertificate(server: SMTPServer, cert: String) async throws {
        try await EmailNotifier(config: email(server, starttls: .required), caFile: cert).send(
            notification([transition()], receiver: "mail"))
        #expect(server.messages().first?.tls == true)

        // Without STARTTLS the server refuses: a 5xx, not retried.
        do {
            try await EmailNotifier(config: email(server, starttls: .off)).send(
                notification([transition()], receiver: "mail"))
            Issue.record("sent without TLS")
        } catch let e as DeliveryError {
            #expect(!e.retryable)
        }
        // An untrusted certificate is not accepted.
        do {
            try await EmailNotifier(config: email(server, starttls: .required)).send(
                notification([transition()], receiver: "mail"))
            Issue.record("trusted a self-signed certificate without its CA")
        } catch let e as DeliveryError {
            #expect(!e.message.isEmpty)
        }
        #expect(server.messages().count == 1)
    }

    @Test func authRightAndWrongPassword() async throws {
        var options = SMTPServer.Options()
        options.auth = ("klaxon", "s3cret-PASS")
        try await SMTPServer.with(options) { server in try await authRightAndWrongPassword(server: server) }
    }

    func authRightAndWrongPassword(server: SMTPServer) async throws {
        try await EmailNotifier(config: email(server, user: "klaxon", password: "s3cret-PASS")).send(
            notification([transition()], receiver: "mail"))
        #expect(server.messages().first?.authenticated == true)
        do {
            try await EmailNotifier(config: email(server, user: "klaxon", password: "wrong-PASS")).send(
                notification([transition()], receiver: "mail"))
            Issue.record("a wrong password was accepted")
        } catch let e as DeliveryError {
            #expect(!e.retryable)
            #expect(!e.message.contains("wrong-PASS"))
        }
    }

    @Test func smtp4xxIsRetriedAnd5xxIsNot() async throws {
        var options = SMTPServer.Options()
        options.replies = ["451 4.3.0 try again later", "550 5.7.1 rejected"]
        try await SMTPServer.with(options) { server in try await smtp4xxIsRetriedAnd5xxIsNot(server: server) }
    }

    func smtp4xxIsRetriedAnd5xxIsNot(server: SMTPServer) async throws {
        let notifier = try EmailNotifier(config: email(server))
        for expected in [(451, true), (550, false)] {
            do {
                try await notifier.send(notification([transition()], receiver: "mail"))
                Issue.record("SMTP \(expected.0) did not fail")
            } catch let e as DeliveryError {
                #expect(e.kind == .smtp(expected.0))
                #expect(e.retryable == expected.1)
            }
        }
        try await notifier.send(notification([transition()], receiver: "mail"))
        #expect(server.messages().count == 1)
    }

    @Test func dispatcherRetriesThroughA4xxWithOneMessageID() async throws {
        var options = SMTPServer.Options()
        options.replies = ["421 4.7.0 busy"]
        try await SMTPServer.with(options) { server in
            try await dispatcherRetriesThroughA4xxWithOneMessageID(server: server)
        }
    }

    func dispatcherRetriesThroughA4xxWithOneMessageID(server: SMTPServer) async throws {
        let fixture = try OutboxFixture()
        let dispatcher = Dispatcher(
            store: fixture.store, notifiers: ["mail": try EmailNotifier(config: email(server))], routing: Routing(),
            settings: fastSettings())
        try await fixture.queue([transition()], receivers: ["mail"])
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.retried == 1 && pass.sent == 1)
        // The retry is the same message: the same key and, as it opens the episode's thread, the
        // thread's root id.
        let row = try await #require(try fixture.store.outbox().first)
        #expect(server.messages().first?.header("X-Klaxon-Key") == row.id)
        #expect(server.messages().first?.header("Message-ID") == "<alert-\(row.transitionID).mail@example.org>")
    }
}
