import CCurl
import Foundation
import KlaxonCore
import Mustache

/// Sends notifications by email over SMTP through libcurl (`smtp://`, `smtps://`, STARTTLS per
/// `starttls`). The message's `Message-ID` carries the idempotency key.
public struct EmailNotifier: Notifier {
    public let config: Receiver.Email
    /// A PEM file of certificates to trust (for a private or self-signed SMTP server), or nil for the system's.
    let caFile: String?
    let subject: MustacheTemplate?
    let text: MustacheTemplate?
    let html: MustacheTemplate?
    let clock: @Sendable () -> Int64

    public init(
        config: Receiver.Email, caFile: String? = nil,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) throws {
        self.config = config
        self.caFile = caFile
        self.clock = clock
        // The subject and the text part are plain text (the header encoding and base64 keep them
        // inert); only the HTML part escapes values for HTML.
        subject = try config.subject.map {
            try MessageRenderer.compile($0, origin: "receiver \(config.name) subject", escaping: .text)
        }
        text = try config.text.map {
            try MessageRenderer.compile($0, origin: "receiver \(config.name) text", escaping: .text)
        }
        html = try config.html.map {
            try MessageRenderer.compile($0, origin: "receiver \(config.name) html", escaping: .html)
        }
    }

    public var rateLimit: Double? { config.rateLimit }
    public var connections: Int { config.connections }

    func defaultSubject(_ n: AlertNotification) -> String {
        guard let first = n.alerts.first else { return "[Klaxon] (empty)" }
        if n.alerts.count == 1 { return "[Klaxon] \(WebhookPayloads.title(first).dropFirst(2))" }
        return
            "[Klaxon] \(n.alerts.count) alerts\(n.isDigest ? " held during quiet hours" : ""): \(first.transition.rule) …"
    }

    func defaultText(_ n: AlertNotification) -> String {
        var out: [String] = []
        for a in n.alerts {
            out.append(WebhookPayloads.title(a))
            out.append(a.message)
            out.append("Why: \(a.transition.explanation)")
            out.append(WebhookPayloads.footer(a))
            if let link = n.link(a) { out.append("Open: \(link)") }
            out.append("")
        }
        out.append("— Klaxon (notification \(n.key))")
        return out.joined(separator: "\n")
    }

    func defaultHTML(_ n: AlertNotification) -> String {
        var out = ["<!doctype html><html><body style=\"font-family:sans-serif\">"]
        for a in n.alerts {
            let t = a.transition
            out.append(
                "<div style=\"border-left:6px solid \(WebhookPayloads.colour(t));padding:4px 12px;margin:8px 0\">"
                    + "<h3 style=\"margin:4px 0\">\(HTMLText.escape(WebhookPayloads.title(a)))</h3>"
                    + "<p>\(HTMLText.escape(a.message))</p>"
                    + "<p style=\"color:#555\">Why: \(HTMLText.escape(t.explanation))<br>\(HTMLText.escape(WebhookPayloads.footer(a)))</p>"
                    + (n.link(a).map { "<p><a href=\"\(HTMLText.escape($0))\">Open alert #\(a.id)</a></p>" } ?? "")
                    + "</div>"
            )
        }
        out.append(
            "<p style=\"color:#595959;font-size:small\">Klaxon — notification \(HTMLText.escape(n.key))</p></body></html>"
        )
        return out.joined(separator: "\n")
    }

    /// The thread a notification of one alert belongs to: its episode (`alert-123`), so mail clients
    /// that thread by `References` keep an alert's messages together.
    static func thread(_ n: AlertNotification) -> String? {
        guard n.alerts.count == 1, let a = n.alerts.first, a.id > 0 else { return nil }
        return "alert-\(a.id)"
    }

    /// The full message source.
    public func render(_ n: AlertNotification) throws -> String {
        let context = WebhookPayloads.templateContext(n)
        return EmailMessage.build(
            from: config.from, to: config.to, subject: subject?.render(context) ?? defaultSubject(n),
            text: text?.render(context) ?? defaultText(n), html: html?.render(context) ?? defaultHTML(n),
            messageID: n.key,
            date: clock(), thread: Self.thread(n))
    }

    public func send(_ n: AlertNotification) async throws {
        let message = try render(n)
        let config = self.config
        let caFile = self.caFile
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            // curl_easy_perform blocks: keep it off the cooperative thread pool.
            Thread.detachNewThread {
                do {
                    try SMTPTransfer.perform(config: config, caFile: caFile, message: message)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

/// One SMTP transfer through curl's easy API.
enum SMTPTransfer {
    /// Feeds the message to curl's upload read callback.
    final class Upload {
        let bytes: [UInt8]
        var offset = 0
        init(_ text: String) { bytes = Array(text.utf8) }
    }

    static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return true
    }()

    static func perform(config: Receiver.Email, caFile: String?, message: String) throws {
        _ = initialized
        guard let curl = curl_easy_init() else {
            throw DeliveryError(
                kind: .configuration, retryable: true, message: "receiver \(config.name): curl_easy_init failed")
        }
        defer { curl_easy_cleanup(curl) }
        var recipients: UnsafeMutablePointer<curl_slist>? = nil
        for to in config.to { recipients = curl_slist_append(recipients, "<\(EmailMessage.address(to))>") }
        defer { curl_slist_free_all(recipients) }
        let upload = Upload(message)
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }

        klaxon_curl_setopt_string(curl, CURLOPT_URL, config.smtpURL)
        klaxon_curl_setopt_string(curl, CURLOPT_MAIL_FROM, "<\(EmailMessage.address(config.from))>")
        klaxon_curl_setopt_slist(curl, CURLOPT_MAIL_RCPT, recipients)
        let ssl: curl_usessl
        switch config.starttls {
        case .required: ssl = CURLUSESSL_ALL
        case .opportunistic: ssl = CURLUSESSL_TRY
        case .off: ssl = CURLUSESSL_NONE
        }
        klaxon_curl_setopt_long(curl, CURLOPT_USE_SSL, Int(ssl.rawValue))
        if let caFile { klaxon_curl_setopt_string(curl, CURLOPT_CAINFO, caFile) }
        if let user = config.username { klaxon_curl_setopt_string(curl, CURLOPT_USERNAME, user) }
        if let password = config.password { klaxon_curl_setopt_string(curl, CURLOPT_PASSWORD, password.value) }
        klaxon_curl_setopt_long(curl, CURLOPT_UPLOAD, 1)
        klaxon_curl_setopt_long(curl, CURLOPT_NOSIGNAL, 1)
        klaxon_curl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, Int(min(config.timeout, 30) * 1000))
        klaxon_curl_setopt_long(curl, CURLOPT_TIMEOUT_MS, Int(config.timeout * 1000))
        klaxon_curl_setopt_pointer(curl, CURLOPT_ERRORBUFFER, errorBuffer)
        klaxon_curl_setopt_callback(curl, CURLOPT_READFUNCTION) { buffer, size, count, context in
            guard let buffer, let context else { return 0 }
            let upload = Unmanaged<Upload>.fromOpaque(context).takeUnretainedValue()
            let n = min(size * count, upload.bytes.count - upload.offset)
            guard n > 0 else { return 0 }
            upload.bytes.withUnsafeBufferPointer { src in
                UnsafeMutableRawPointer(buffer).copyMemory(from: src.baseAddress! + upload.offset, byteCount: n)
            }
            upload.offset += n
            return n
        }
        let code = withExtendedLifetime(upload) {
            klaxon_curl_setopt_pointer(curl, CURLOPT_READDATA, Unmanaged.passUnretained(upload).toOpaque())
            return curl_easy_perform(curl)
        }
        guard code != CURLE_OK else { return }
        var response = 0
        klaxon_curl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &response)
        var detail = String(cString: errorBuffer)
        if detail.isEmpty { detail = String(cString: curl_easy_strerror(code)) }
        if let password = config.password?.value, !password.isEmpty {
            detail = detail.replacingOccurrences(of: password, with: "<secret>")
        }
        throw classify(code: code, smtp: response, detail: detail, receiver: config.name)
    }

    /// SMTP 4xx and connection problems may pass; SMTP 5xx, refused logins and missing TLS will not.
    static func classify(code: CURLcode, smtp: Int, detail: String, receiver: String) -> DeliveryError {
        let prefix = "receiver \(receiver): SMTP"
        if (400...499).contains(smtp) {
            return DeliveryError(kind: .smtp(smtp), retryable: true, message: "\(prefix) \(smtp): \(detail)")
        }
        if (500...599).contains(smtp) {
            return DeliveryError(
                kind: .smtp(smtp), retryable: false, message: "\(prefix) \(smtp) (not retried): \(detail)")
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return DeliveryError(kind: .timeout, retryable: true, message: "\(prefix): timed out: \(detail)")
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING,
            CURLE_SSL_CONNECT_ERROR:
            return DeliveryError(kind: .connection, retryable: true, message: "\(prefix): \(detail)")
        case CURLE_LOGIN_DENIED, CURLE_USE_SSL_FAILED, CURLE_PEER_FAILED_VERIFICATION, CURLE_URL_MALFORMAT:
            return DeliveryError(kind: .configuration, retryable: false, message: "\(prefix) (not retried): \(detail)")
        default:
            return DeliveryError(kind: .connection, retryable: true, message: "\(prefix): \(detail)")
        }
    }
}
