import Foundation

/// Checks of a webhook body rendered from a receiver's `template:`.
enum TemplateBody {
    /// The body as bytes, if it parses as JSON. For Discord, `allowed_mentions: {parse: []}` is added
    /// to a top-level object that has no `allowed_mentions` of its own, as the preset does.
    ///
    /// A body that does not parse (a template that is not JSON, or a `{{{name}}}` value inserted raw)
    /// is a rendering error, not retried: the outbox row is dead with this reason, and a fallback
    /// receiver hears of it, rather than a receiver being sent a bad request again and again.
    static func check(_ text: String, preset: Receiver.Webhook.Preset, receiver: String) throws -> Data {
        let data = Data(text.utf8)
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo["NSDebugDescription"] as? String
            throw DeliveryError(
                kind: .rendering, retryable: false,
                message:
                    "receiver \(receiver): the template's body is not valid JSON\(detail.map { " (\($0))" } ?? "")"
                    + " (not retried; note that {{{name}}} inserts a value unescaped)")
        }
        guard preset == .discord, let object = value as? [String: Any], object["allowed_mentions"] == nil,
            let open = text.firstIndex(of: "{")
        else { return data }
        // The first `{` opens the top-level object (only white space can come before it).
        let member = #""allowed_mentions":{"parse":[]}"# + (object.isEmpty ? "" : ",")
        var patched = text
        patched.insert(contentsOf: member, at: patched.index(after: open))
        return Data(patched.utf8)
    }
}
