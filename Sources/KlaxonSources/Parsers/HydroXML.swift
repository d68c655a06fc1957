import Foundation

/// A small XML reader for the NWS hydrograph documents (the HML product, AHPS `hydrograph.php?output=xml`).
///
/// Why by hand: Foundation's `XMLParser` on Linux is `FoundationXML`, which links libxml2 into the
/// binary for two flat document shapes, and resolves entities and DTDs we never want from hostile
/// input. These documents are elements, attributes and text only. What this reads: elements (names
/// without their namespace prefix), attributes, text with the five predefined entities and numeric
/// character references, CDATA; comments, processing instructions and `<!DOCTYPE …>` are skipped
/// (no entity is ever defined or expanded). What it bounds: the input (`maxBytes`), the depth
/// (`maxDepth`) and the number of elements (`maxElements`); work is one pass over the bytes.
/// Not well-formed input is an error naming the byte offset.
struct HydroXML {
    final class Element {
        let name: String
        let attributes: [String: String]
        var children: [Element] = []
        var text = ""

        init(name: String, attributes: [String: String]) {
            self.name = name
            self.attributes = attributes
        }

        /// The first child named `name`.
        func child(_ name: String) -> Element? { children.first { $0.name == name } }
        func children(_ name: String) -> [Element] { children.filter { $0.name == name } }

        /// Every element named `name` under this one (depth first), this one excluded; not below a match.
        func descendants(_ name: String) -> [Element] {
            var out: [Element] = []
            var stack = Array(children.reversed())
            while let e = stack.popLast() {
                if e.name == name {
                    out.append(e)
                } else {
                    stack.append(contentsOf: e.children.reversed())
                }
            }
            return out
        }

        var trimmedText: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    struct Failure: Error {
        let offset: Int
        let message: String
    }

    static let maxBytes = 32 << 20
    static let maxDepth = 64
    static let maxElements = 2_000_000

    /// The document's root element. The text before the first `<` (a WMO header, `000`, control
    /// characters) and after the last `>` (the product's trailer) is ignored; control characters
    /// other than tab, CR and LF are dropped from text.
    static func parse(_ data: Data) throws -> Element {
        guard data.count <= maxBytes else {
            throw Failure(offset: maxBytes, message: "the document is larger than \(maxBytes >> 20) MiB")
        }
        let bytes = [UInt8](data)
        var i = bytes.firstIndex(of: UInt8(ascii: "<")) ?? bytes.count
        let end = (bytes.lastIndex(of: UInt8(ascii: ">")) ?? -1) + 1
        var stack: [Element] = []
        var root: Element?
        var count = 0

        func find(_ pattern: [UInt8], from: Int) -> Int? {
            guard !pattern.isEmpty, from + pattern.count <= end else { return nil }
            var j = from
            while j + pattern.count <= end {
                if bytes[j] == pattern[0] && bytes[j..<(j + pattern.count)].elementsEqual(pattern) { return j }
                j += 1
            }
            return nil
        }
        func starts(_ pattern: String, at j: Int) -> Bool {
            let p = Array(pattern.utf8)
            guard j + p.count <= end else { return false }
            for k in 0..<p.count where bytes[j + k] != p[k] { return false }
            return true
        }
        func isNameByte(_ b: UInt8) -> Bool {
            !(b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D || b == UInt8(ascii: ">") || b == UInt8(ascii: "/")
                || b == UInt8(ascii: "=") || b == UInt8(ascii: "<"))
        }
        func localName(_ raw: ArraySlice<UInt8>) -> String {
            let s = String(decoding: raw, as: UTF8.self)
            if let colon = s.lastIndex(of: ":") { return String(s[s.index(after: colon)...]) }
            return s
        }

        while i < end {
            if bytes[i] != UInt8(ascii: "<") {
                let start = i
                while i < end, bytes[i] != UInt8(ascii: "<") { i += 1 }
                if let top = stack.last { top.text += decodeText(bytes[start..<i]) }
                continue
            }
            // Markup.
            if starts("<!--", at: i) {
                guard let close = find(Array("-->".utf8), from: i + 4) else {
                    throw Failure(offset: i, message: "a comment that does not end")
                }
                i = close + 3
            } else if starts("<![CDATA[", at: i) {
                guard let close = find(Array("]]>".utf8), from: i + 9) else {
                    throw Failure(offset: i, message: "a CDATA section that does not end")
                }
                if let top = stack.last { top.text += clean(bytes[(i + 9)..<close]) }
                i = close + 3
            } else if i + 1 < end, bytes[i + 1] == UInt8(ascii: "?") {
                guard let close = find(Array("?>".utf8), from: i + 2) else {
                    throw Failure(offset: i, message: "a processing instruction that does not end")
                }
                i = close + 2
            } else if i + 1 < end, bytes[i + 1] == UInt8(ascii: "!") {
                // <!DOCTYPE …> (an internal subset in brackets is skipped whole, never read).
                var j = i + 2
                var depth = 0
                while j < end {
                    if bytes[j] == UInt8(ascii: "[") { depth += 1 }
                    if bytes[j] == UInt8(ascii: "]") { depth -= 1 }
                    if bytes[j] == UInt8(ascii: ">") && depth <= 0 { break }
                    j += 1
                }
                guard j < end else { throw Failure(offset: i, message: "a declaration that does not end") }
                i = j + 1
            } else if i + 1 < end, bytes[i + 1] == UInt8(ascii: "/") {
                var j = i + 2
                while j < end, isNameByte(bytes[j]) { j += 1 }
                let name = localName(bytes[(i + 2)..<j])
                while j < end, bytes[j] != UInt8(ascii: ">") { j += 1 }
                guard j < end, let top = stack.popLast() else {
                    throw Failure(offset: i, message: "an end tag </\(name.prefix(40))> with no open element")
                }
                guard top.name == name else {
                    throw Failure(
                        offset: i, message: "</\(name.prefix(40))> closes <\(top.name.prefix(40))>")
                }
                if stack.isEmpty, root == nil { root = top }
                i = j + 1
            } else {
                var j = i + 1
                while j < end, isNameByte(bytes[j]) { j += 1 }
                guard j > i + 1 else { throw Failure(offset: i, message: "a '<' that starts no tag") }
                let name = localName(bytes[(i + 1)..<j])
                var attributes: [String: String] = [:]
                var selfClosing = false
                while true {
                    while j < end, bytes[j] == 0x20 || bytes[j] == 0x09 || bytes[j] == 0x0A || bytes[j] == 0x0D {
                        j += 1
                    }
                    guard j < end else {
                        throw Failure(offset: i, message: "a tag <\(name.prefix(40))> that does not end")
                    }
                    if bytes[j] == UInt8(ascii: ">") {
                        j += 1
                        break
                    }
                    if bytes[j] == UInt8(ascii: "/"), j + 1 < end, bytes[j + 1] == UInt8(ascii: ">") {
                        selfClosing = true
                        j += 2
                        break
                    }
                    let a = j
                    while j < end, isNameByte(bytes[j]) { j += 1 }
                    guard j > a, j < end, bytes[j] == UInt8(ascii: "="), j + 1 < end,
                        bytes[j + 1] == UInt8(ascii: "\"") || bytes[j + 1] == UInt8(ascii: "'")
                    else { throw Failure(offset: j, message: "a bad attribute in <\(name.prefix(40))>") }
                    let key = localName(bytes[a..<j])
                    let quote = bytes[j + 1]
                    var v = j + 2
                    while v < end, bytes[v] != quote { v += 1 }
                    guard v < end else { throw Failure(offset: j, message: "an attribute value that does not end") }
                    attributes[key] = decodeText(bytes[(j + 2)..<v])
                    j = v + 1
                }
                count += 1
                guard count <= maxElements else {
                    throw Failure(offset: i, message: "more than \(maxElements) elements")
                }
                let element = Element(name: name, attributes: attributes)
                if let top = stack.last {
                    top.children.append(element)
                } else if root != nil {
                    throw Failure(offset: i, message: "a second root element <\(name.prefix(40))>")
                }
                if selfClosing {
                    if stack.isEmpty { root = element }
                } else {
                    stack.append(element)
                    guard stack.count <= maxDepth else {
                        throw Failure(offset: i, message: "elements nested deeper than \(maxDepth)")
                    }
                }
                i = j
            }
        }
        if let open = stack.last { throw Failure(offset: end, message: "<\(open.name.prefix(40))> is not closed") }
        guard let root else { throw Failure(offset: 0, message: "no element at all") }
        return root
    }

    /// Bytes as text without control characters (tab, CR and LF kept).
    static func clean(_ raw: ArraySlice<UInt8>) -> String {
        String(decoding: raw.filter { $0 >= 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }, as: UTF8.self)
    }

    /// Text with the predefined entities and character references replaced; an unknown entity is kept as written.
    static func decodeText(_ raw: ArraySlice<UInt8>) -> String {
        let s = clean(raw)
        guard s.contains("&") else { return s }
        var out = ""
        var rest = Substring(s)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            let after = rest[amp...]
            guard let semi = after.prefix(12).firstIndex(of: ";") else {
                out += "&"
                rest = after.dropFirst()
                continue
            }
            let name = after[after.index(after: amp)..<semi]
            var replacement: String?
            switch name {
            case "amp": replacement = "&"
            case "lt": replacement = "<"
            case "gt": replacement = ">"
            case "quot": replacement = "\""
            case "apos": replacement = "'"
            default:
                var code: UInt32?
                if name.hasPrefix("#x") || name.hasPrefix("#X") {
                    code = UInt32(name.dropFirst(2), radix: 16)
                } else if name.hasPrefix("#") {
                    code = UInt32(name.dropFirst())
                }
                if let code, let scalar = Unicode.Scalar(code), code >= 0x20 || code == 0x09 || code == 0x0A {
                    replacement = String(Character(scalar))
                }
            }
            if let replacement {
                out += replacement
                rest = after[after.index(after: semi)...]
            } else {
                out += "&"
                rest = after.dropFirst()
            }
        }
        out += rest
        return out
    }
}
