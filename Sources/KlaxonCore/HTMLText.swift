/// HTML escaping for the places Klaxon writes HTML (email bodies, the demo's chat page).
public enum HTMLText {
    /// Escapes `&`, `<`, `>`, `"` and `'` (scalar by scalar, so a combining mark cannot hide one):
    /// safe in text and in quoted attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
