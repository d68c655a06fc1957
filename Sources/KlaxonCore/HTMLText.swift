/// HTML escaping for the places Klaxon writes HTML (email bodies, the demo's chat page).
public enum HTMLText {
    /// Escapes `&`, `<`, `>`, `"` and `'` (scalar by scalar, so a combining mark cannot hide one):
    /// safe in text and in quoted attribute values.
    public static func escape(_ text: String) -> String { Escape.html(text) }
}
