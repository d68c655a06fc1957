import KlaxonCore
import Mustache

/// Per-platform escaping of data (`ChatEscape`, in KlaxonCore: the chat endpoints' replies use it too).
extension ChatEscape {
    /// The escaper for values from data in a preset's messages.
    public static func escaper(for preset: Receiver.Webhook.Preset) -> @Sendable (String) -> String {
        let table = table(for: preset)
        return { table($0) }
    }

    /// The preset's table (`Escape.slack`, …; none for the generic preset).
    public static func table(for preset: Receiver.Webhook.Preset) -> Escape {
        switch preset {
        case .slack: .slack
        case .mattermost: .mattermost
        case .discord: .discord
        case .msteams: .msteams
        case .googlechat: .googlechat
        case .generic: Escape([])
        }
    }
}

/// How a mustache template escapes the values it substitutes (`{{name}}`); the template's own text
/// is the operator's and is never changed. `{{{name}}}` substitutes a value raw, whatever this says.
public enum TemplateEscaping: Sendable, Hashable {
    /// HTML (mustache's default): `&`, `<`, `>`, `"`, `'`. For HTML email bodies.
    case html
    /// Nothing escaped: plain text (rule messages, email subjects and text parts).
    case text
    /// For a webhook body: the preset's chat escaping, then JSON string escaping without the quotes,
    /// because variables sit inside JSON strings (`{"text": "{{message}}"}`).
    case json(Receiver.Webhook.Preset)

    /// The name of the registered mustache content type.
    var contentTypeName: String {
        switch self {
        case .html: "HTML"
        case .text: "TEXT"
        case .json(let preset): "KLAXON_JSON_\(preset.rawValue.uppercased())"
        }
    }

    /// Registers the JSON content types with swift-mustache once (its registry is global and locked).
    static let registered: Bool = {
        for preset in Receiver.Webhook.Preset.allCases {
            MustacheContentTypes.register(
                JSONStringContent(escape: Escape.json.unquoted.adding(ChatEscape.table(for: preset))),
                named: TemplateEscaping.json(preset).contentTypeName)
        }
        return true
    }()
}

/// A mustache content type: a value as the inside of a JSON string literal, after the preset's
/// chat escaping, in one pass: `Escape.json` without its quotes, with the chat table's rules added
/// (no chat replacement holds a character JSON escapes, so this is the one escaping after the other).
struct JSONStringContent: MustacheContentType {
    let escape: Escape

    func escapeText(_ text: String) -> String { escape(text) }
}
