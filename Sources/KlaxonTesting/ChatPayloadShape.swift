import Foundation
import KlaxonCore

/// Checks a chat payload against its platform's documented shape, independently of the code that
/// builds it (its limits are written here again, from the platforms' references): what a test of a
/// preset, of `--render` and of an end-to-end delivery asserts is empty.
public enum ChatPayloadShape {
    /// A payload a test holds as `JSONSerialization` read it (a body received), as a typed value;
    /// `.null` when it is not JSON.
    static func value(_ payload: Any) -> JSONValue {
        guard JSONSerialization.isValidJSONObject(payload),
            let data = try? JSONSerialization.data(withJSONObject: payload)
        else { return .null }
        return JSONValue.parse(data) ?? .null
    }

    /// A list of objects only (nil when anything in it is not an object).
    static func objects(_ value: JSONValue?) -> [[String: JSONValue]]? {
        guard let list = value?.array else { return nil }
        let out = list.compactMap(\.object)
        return out.count == list.count ? out : nil
    }

    /// `slackProblems` of a payload as `JSONSerialization` read it.
    public static func slackProblems(_ payload: Any) -> [String] { slackProblems(value(payload)) }

    /// `slackTexts` of a payload as `JSONSerialization` read it.
    public static func slackTexts(_ payload: Any) -> [String] { slackTexts(value(payload)) }

    /// `mattermostProblems` of a payload as `JSONSerialization` read it.
    public static func mattermostProblems(_ payload: Any) -> [String] { mattermostProblems(value(payload)) }

    /// Slack's Block Kit reference: a message has at most 50 blocks; a text object 1 to 3,000
    /// characters (a header's plain text 150); an actions block 1 to 25 elements; a context block
    /// 1 to 10; a button's text 75, `value` 2,000, `url` 3,000, `action_id` 255; a `block_id` 255,
    /// unique in its message, and so is each `action_id`; an image needs `image_url` (3,000) and
    /// `alt_text` (2,000).
    public static func slackProblems(_ payload: JSONValue) -> [String] {
        var problems: [String] = []
        func count(_ s: String) -> Int { s.utf16.count }
        func text(_ object: JSONValue?, _ path: String, types: Set<String>, limit: Int) {
            guard let t = object?.object, let type = t["type"]?.string, types.contains(type),
                let value = t["text"]?.string
            else { return problems.append("\(path): not a text object of type \(types.sorted())") }
            if value.isEmpty || count(value) > limit {
                problems.append("\(path): \(count(value)) characters (1…\(limit))")
            }
            if type == "mrkdwn", t["emoji"] != nil { problems.append("\(path): emoji is for plain_text only") }
        }
        if payload["text"]?.string?.isEmpty != false {
            problems.append("text: the notification fallback is missing")
        }
        guard let blocks = objects(payload["blocks"]) else { return problems + ["blocks: missing"] }
        if blocks.isEmpty || blocks.count > 50 { problems.append("blocks: \(blocks.count) (1…50)") }
        var blockIDs: Set<String> = []
        var actionIDs: Set<String> = []
        func button(_ b: [String: JSONValue], _ path: String) {
            guard b["type"]?.string == "button" else { return problems.append("\(path): not a button") }
            text(b["text"], path + ".text", types: ["plain_text"], limit: 75)
            guard let id = b["action_id"]?.string, !id.isEmpty, count(id) <= 255 else {
                return problems.append("\(path): action_id missing or longer than 255")
            }
            if !actionIDs.insert(id).inserted { problems.append("\(path): action_id \(id) is not unique") }
            if let v = b["value"]?.string, count(v) > 2000 { problems.append("\(path): value longer than 2000") }
            if let u = b["url"]?.string, count(u) > 3000 || !(u.hasPrefix("https://") || u.hasPrefix("http://")) {
                problems.append("\(path): url not an http(s) URL of at most 3000")
            }
            if let s = b["style"]?.string, !["primary", "danger"].contains(s) {
                problems.append("\(path): style \(s)")
            }
        }
        for (i, block) in blocks.enumerated() {
            let path = "blocks[\(i)]"
            if let id = block["block_id"]?.string {
                if id.isEmpty || count(id) > 255 { problems.append("\(path): block_id empty or longer than 255") }
                if !blockIDs.insert(id).inserted { problems.append("\(path): block_id \(id) is not unique") }
            }
            switch block["type"]?.string {
            case "header": text(block["text"], path + ".text", types: ["plain_text"], limit: 150)
            case "section":
                text(block["text"], path + ".text", types: ["plain_text", "mrkdwn"], limit: 3000)
                if let accessory = block["accessory"]?.object { button(accessory, path + ".accessory") }
            case "context":
                let elements = block["elements"]?.array ?? []
                if elements.isEmpty || elements.count > 10 {
                    problems.append("\(path): \(elements.count) elements (1…10)")
                }
                for (j, e) in elements.enumerated() {
                    text(e, "\(path).elements[\(j)]", types: ["plain_text", "mrkdwn"], limit: 3000)
                }
            case "image":
                guard let url = block["image_url"]?.string, !url.isEmpty, count(url) <= 3000 else {
                    problems.append("\(path): image_url missing or longer than 3000")
                    break
                }
                let alt = block["alt_text"]?.string ?? ""
                if alt.isEmpty || count(alt) > 2000 { problems.append("\(path): alt_text missing or longer than 2000") }
                if let title = block["title"], title.object != nil {
                    text(title, "\(path).title", types: ["plain_text"], limit: 2000)
                }
            case "actions":
                let elements = objects(block["elements"]) ?? []
                if elements.isEmpty || elements.count > 25 {
                    problems.append("\(path): \(elements.count) elements (1…25)")
                }
                for (j, e) in elements.enumerated() { button(e, "\(path).elements[\(j)]") }
            case "divider": break
            default: problems.append("\(path): unknown block type \(block["type"]?.string ?? "nil")")
            }
        }
        return problems
    }

    /// Every text a person reads in a Slack payload's blocks (headers, sections, contexts, buttons,
    /// alt texts), for checks on escaping.
    public static func slackTexts(_ payload: JSONValue) -> [String] {
        var out: [String] = []
        func walk(_ v: JSONValue) {
            if let d = v.object {
                for (k, x) in d {
                    if k == "text" || k == "alt_text", let s = x.string { out.append(s) } else { walk(x) }
                }
            } else if let a = v.array {
                a.forEach(walk)
            }
        }
        walk(payload["blocks"] ?? [])
        return out
    }

    /// Mattermost's message buttons: each attachment's `actions` are buttons with an `id` of
    /// letters and digits, a `name`, and an `integration` with an absolute `url` and a `context`
    /// object; the payload also keeps Slack's attachment fields.
    public static func mattermostProblems(_ payload: JSONValue) -> [String] {
        var problems: [String] = []
        guard let attachments = objects(payload["attachments"]) else { return ["attachments: missing"] }
        for (i, a) in attachments.enumerated() {
            let path = "attachments[\(i)]"
            for key in ["color", "title", "text", "footer"] where a[key]?.string == nil {
                problems.append("\(path).\(key): missing")
            }
            guard let actions = a["actions"] else { continue }
            guard let list = objects(actions), !list.isEmpty else {
                problems.append("\(path).actions: not a list of actions")
                continue
            }
            var ids: Set<String> = []
            for (j, action) in list.enumerated() {
                let ap = "\(path).actions[\(j)]"
                guard let id = action["id"]?.string, !id.isEmpty,
                    id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) })
                else {
                    problems.append("\(ap).id: missing or not letters and digits")
                    continue
                }
                if !ids.insert(id).inserted { problems.append("\(ap).id \(id) is not unique") }
                if action["name"]?.string?.isEmpty != false { problems.append("\(ap).name: missing") }
                guard let integration = action["integration"]?.object,
                    let url = integration["url"]?.string, url.hasPrefix("http://") || url.hasPrefix("https://"),
                    integration["context"]?.object != nil
                else {
                    problems.append("\(ap).integration: needs an absolute url and a context object")
                    continue
                }
            }
        }
        return problems
    }
}
