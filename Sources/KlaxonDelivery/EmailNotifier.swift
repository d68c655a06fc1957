import CCurl
import Crypto
import Foundation
import KlaxonCore
import Mustache

/// A PNG chart of what an alert is about (its series over the last 48 hours), or nil when there is
/// none to draw. The daemon draws it with the status site's charts (`ChartImages`).
public typealias ChartSource = @Sendable (Transition) async -> Data?

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
    /// Draws what an alert is about as a PNG for the HTML part (nil: no charts).
    let charts: ChartSource?

    public init(
        config: Receiver.Email, caFile: String? = nil,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }, charts: ChartSource? = nil
    ) throws {
        self.config = config
        self.charts = charts
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
    public var integration: String { "email" }

    /// One alert: `Potomac River at Little Falls: minor flood stage`, the same for every message of
    /// the episode (the headline it opened with), so mail clients that thread by subject keep them
    /// together; the current state is the first line of the body. Several: `3 alerts: PLACE, PLACE …`.
    func defaultSubject(_ n: AlertNotification) -> String {
        guard let first = n.alerts.first else { return "[Klaxon] (empty)" }
        if n.alerts.count == 1 { return Self.episodeSubject(first) }
        var places: [String] = []
        for a in n.alerts where !places.contains(WebhookPayloads.place(a.transition)) {
            places.append(WebhookPayloads.place(a.transition))
        }
        let held = n.isDigest ? " held during quiet hours" : ""
        return "\(n.alerts.count) alerts\(held): " + WebhookPayloads.truncate(places.joined(separator: ", "), to: 120)
    }

    /// The subject of an alert's thread: its place and the headline its episode opened with.
    static func episodeSubject(_ a: NotifiedAlert) -> String {
        let t = a.transition
        guard let headline = t.opening ?? (t.state == .firing ? t.headline : nil) ?? t.headline else {
            return "[Klaxon] \(WebhookPayloads.engineTitle(t).dropFirst(2))"
        }
        return "\(WebhookPayloads.place(t)): \(headline)"
    }

    func defaultText(_ n: AlertNotification) -> String {
        var out: [String] = []
        for a in n.alerts {
            out.append(WebhookPayloads.title(a))
            out.append(a.message)
            out.append("Why: \(a.transition.explanation)")
            out.append(WebhookPayloads.footer(a))
            if let link = n.link(a) { out.append("Open: \(link)") }
            for l in WebhookPayloads.links(n, a) { out.append("\(l.label): \(l.url)") }
            out.append("")
        }
        out.append("— Klaxon (notification \(n.key))")
        return out.joined(separator: "\n")
    }

    /// The HTML part: one card per alert with its headline, message, why, links as buttons and, for a
    /// single alert, its chart (`cid:`). Colours meet WCAG AA: body text #1f1f1f and links #0b57d0 on
    /// white (16.3:1 and 6.6:1), white on the #0b57d0 button (6.6:1), footer #595959 (7:1); the
    /// severity is said in words too, not by the border's colour alone.
    func defaultHTML(_ n: AlertNotification, chart: String? = nil) -> String {
        var out = [
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                + "<meta name=\"viewport\" content=\"width=device-width\"><title>\(HTMLText.escape(defaultSubject(n)))</title></head>"
                + "<body style=\"margin:0;padding:16px;background:#ffffff;color:#1f1f1f;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:15px;line-height:1.45\">"
        ]
        if n.isDigest {
            out.append("<p style=\"margin:0 0 8px\"><strong>Held during quiet hours (\(n.alerts.count))</strong></p>")
        }
        for a in n.alerts {
            let t = a.transition
            let state = t.state == .resolved ? "resolved" : t.severity.rawValue
            var card =
                "<div style=\"border-left:6px solid \(WebhookPayloads.colour(t));padding:4px 14px;margin:10px 0 18px;max-width:680px\">"
                + "<p style=\"margin:0;color:#595959;font-size:13px;text-transform:uppercase;letter-spacing:.04em\">\(HTMLText.escape(state))</p>"
                + "<h2 style=\"margin:2px 0 8px;font-size:19px;color:#1f1f1f\">\(HTMLText.escape(WebhookPayloads.title(a)))</h2>"
                + "<p style=\"margin:0 0 8px\">\(HTMLText.escape(a.message))</p>"
                + "<p style=\"margin:0 0 8px\"><strong>Why:</strong> \(HTMLText.escape(t.explanation))</p>"
            if let chart, n.alerts.count == 1 {
                card +=
                    "<p style=\"margin:8px 0\"><img src=\"cid:\(HTMLText.escape(chart))\" width=\"640\" style=\"max-width:100%;height:auto;border:1px solid #d0d0d0\" alt=\"\(HTMLText.escape("Chart of \(WebhookPayloads.place(t)) over the last 48 hours"))\"></p>"
                if let caption = WebhookPayloads.chartCaption(a) {
                    card += "<p style=\"margin:0 0 8px;color:#595959;font-size:13px\">\(HTMLText.escape(caption))</p>"
                }
            }
            var buttons: [String] = []
            if let link = n.link(a) {
                buttons.append(
                    "<a href=\"\(HTMLText.escape(link))\" style=\"display:inline-block;background:#0b57d0;color:#ffffff;text-decoration:none;padding:7px 14px;border-radius:4px;margin:0 8px 6px 0\">Open alert #\(a.id)</a>"
                )
            }
            for l in WebhookPayloads.links(n, a) {
                buttons.append(
                    "<a href=\"\(HTMLText.escape(l.url))\" style=\"display:inline-block;color:#0b57d0;padding:7px 4px;margin:0 8px 6px 0\">\(HTMLText.escape(l.label))</a>"
                )
            }
            if !buttons.isEmpty { card += "<p style=\"margin:10px 0 4px\">" + buttons.joined() + "</p>" }
            card +=
                "<p style=\"margin:6px 0 0;color:#595959;font-size:13px\">\(HTMLText.escape(WebhookPayloads.footer(a)))</p></div>"
            out.append(card)
        }
        out.append(
            "<p style=\"color:#595959;font-size:12px\">Klaxon — notification \(HTMLText.escape(n.key))</p></body></html>"
        )
        return out.joined(separator: "\n")
    }

    /// The thread a notification of one alert belongs to: its episode and the receiver
    /// (`alert-123.mail`), so mail clients that thread by `References` keep an alert's messages
    /// together, and two receivers that mail one mailbox (each its own text) never send two
    /// different messages under one `Message-ID`.
    static func thread(_ n: AlertNotification) -> String? {
        guard n.alerts.count == 1, let a = n.alerts.first, a.id > 0 else { return nil }
        return "alert-\(a.id).\(receiverTag(n.receiver))"
    }

    /// A receiver's name as it can stand in a `Message-ID`: as it is when it is made of letters,
    /// digits, `-` and `_` (ASCII, at most 64), else those of its characters and, after `=` (which
    /// such a name never holds), the first 8 hex digits of its SHA-256, so distinct names stay
    /// distinct.
    static func receiverTag(_ name: String) -> String {
        func plain(_ c: Unicode.Scalar) -> Bool {
            c.isASCII
                && (("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "-"
                    || c == "_")
        }
        if !name.isEmpty, name.unicodeScalars.count <= 64, name.unicodeScalars.allSatisfy(plain) { return name }
        var kept = ""
        kept.unicodeScalars.append(contentsOf: name.unicodeScalars.filter(plain).prefix(32))
        let digest = SHA256.hash(data: Data(name.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
        return kept + "=" + digest
    }

    /// The first message of an episode to this receiver is the thread's root: its `Message-ID` is
    /// `alert-123.RECEIVER@domain`; every later one has its own and answers it (`In-Reply-To`,
    /// `References`).
    static func threading(_ n: AlertNotification) -> EmailMessage.Threading? {
        guard let root = thread(n), let a = n.alerts.first else { return nil }
        if a.transition.state != .resolved && a.isNewToReceiver && a.presented.transition.state == .firing {
            return EmailMessage.Threading(messageID: root, replyTo: nil)
        }
        return EmailMessage.Threading(messageID: n.key, replyTo: root)
    }

    /// The full message source (`--render`): the chart, when there is one, is named by its Content-ID.
    public func render(_ n: AlertNotification) throws -> String { try render(n, chart: nil) }

    /// The full message source; `chart` is the single alert's PNG, shown inline.
    public func render(_ n: AlertNotification, chart: Data?) throws -> String {
        var context = WebhookPayloads.templateContext(n)
        let image = chart.flatMap { png -> EmailMessage.InlineImage? in
            guard n.alerts.count == 1, let a = n.alerts.first else { return nil }
            return EmailMessage.InlineImage(
                contentID: "chart-\(a.id > 0 ? String(a.id) : "test")@\(EmailMessage.domain(config.from))", png: png)
        }
        if let image { context["chart_cid"] = "cid:" + image.contentID }
        return EmailMessage.build(
            from: config.from, to: config.to, subject: subject?.render(context) ?? defaultSubject(n),
            text: text?.render(context) ?? defaultText(n),
            html: html?.render(context) ?? defaultHTML(n, chart: image?.contentID),
            messageID: n.key, date: clock(), threading: Self.threading(n),
            image: image)
    }

    public func send(_ n: AlertNotification) async throws {
        // One alert: its chart inline, when the daemon can draw it (a chart that fails is left out).
        var png: Data? = nil
        if n.alerts.count == 1, let a = n.alerts.first, let charts { png = await charts(a.transition) }
        let message = try render(n, chart: png)
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
