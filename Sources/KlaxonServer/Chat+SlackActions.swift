import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore

/// `POST /chat/slack/actions`, Slack's interactivity Request URL: the presses of a message's
/// buttons (`block_actions`). Checked exactly as a slash command is (`verifiedSlack`), and a
/// request seen before within the time it could pass is refused (401), so a replayed press acts
/// once: the signatures are kept in the store (`claimOnce`), through restarts and across daemons. The request is answered at once with 200; the action is taken and its result posted to
/// the press's `response_url` afterwards (`ChatResponses`): the original message updated in place
/// ("Acked by @alice, 09:50 UTC", the pressed button gone), or an ephemeral answer to the presser
/// alone when they may not act or there was nothing to act on, with nothing changed.
enum SlackActions {
    /// An interactivity payload carries the whole message (up to 50 blocks of text): larger than a
    /// command, still bounded.
    static let maxBody = 1 << 20

    static func add(
        to router: Router<BasicRequestContext>, settings: ChatEndpoints.Settings, seen: any ReplayGuard,
        now: @escaping @Sendable () -> Int64, act: @escaping ChatEndpoints.Act, responses: ChatResponses
    ) {
        router.post("/chat/slack/actions") { request, _ -> Response in
            let at = now()
            let signed: ChatEndpoints.SlackRequest
            switch try await ChatEndpoints.verifiedSlack(request, settings: settings, now: at, limit: maxBody) {
            case .refused(let response): return response
            case .verified(let v): signed = v
            }
            // The same signed request again, while its timestamp would still pass: a replay, also
            // after a restart and on another daemon of the same store (its signatures are kept there).
            guard
                try await seen.claimOnce(
                    key: "slack:" + signed.signature, expires: signed.timestamp + settings.maxSkew, now: at)
            else { return ChatEndpoints.reply("replayed request", status: .unauthorized) }
            let form = ChatEndpoints.parseForm(String(decoding: signed.body.readableBytesView, as: UTF8.self))
            let press: SlackPress
            switch SlackPress.parse(form["payload"]) {
            case .failure(let problem): return ChatEndpoints.reply(problem.message, status: .badRequest)
            case .success(let p): press = p
            }
            // An Open button (a link) or anything else Klaxon did not put there: nothing to do.
            guard let action = press.action, let episode = press.episode else { return Response(status: .ok) }
            guard settings.allowsResponseURL(press.responseURL) else {
                return ChatEndpoints.reply(
                    "response_url is not one Klaxon posts to (chat.slack.response_url_prefix)", status: .badRequest)
            }
            let queued = responses.enqueue {
                let done = now()
                let outcome = await act(ChatEndpoints.Press(user: press.user, action: action, episode: episode), done)
                return ChatResponses.Reply(
                    url: press.responseURL, body: press.reply(to: outcome, action: action, at: done))
            }
            return queued
                ? Response(status: .ok) : ChatEndpoints.reply("busy; try again", status: .serviceUnavailable)
        }
    }
}

/// One button press as Slack sends it: form field `payload`, JSON with `type: block_actions`,
/// `user` (`id`, `username`, `team_id`), `team.id`, `actions[0]` (`action_id`, `block_id`,
/// `value`), `response_url`, and the `message` with its `blocks`. Signed, still untrusted: every
/// field is checked for type and size before use; ids are Slack's shape.
struct SlackPress: Sendable {
    var user: ChatEndpoints.User
    /// The action a Klaxon button names; nil for Open (a link) and unknown buttons.
    var action: ChatAction?
    var episode: Int64?
    var actionID: String
    var blockID: String
    var responseURL: String
    /// The message's blocks (to update it in place), at most `maxBlocks`: Slack's own, echoed back
    /// as they came, so free-form.
    var blocks: [[String: JSONValue]]
    /// The message's fallback text, cut to 3,000 characters.
    var text: String

    struct Problem: Error, Equatable {
        var message: String
    }

    /// The most blocks a message has.
    static let maxBlocks = 50

    static func parse(_ payload: String?) -> Result<SlackPress, Problem> {
        func problem(_ m: String) -> Result<SlackPress, Problem> { .failure(Problem(message: m)) }
        guard let payload, !payload.isEmpty else { return problem("the request has no payload") }
        guard let object = JSONValue.parse(payload.utf8) else { return problem("the payload is not JSON") }
        guard let p = object.object else { return problem("the payload is not a JSON object") }
        guard p["type"]?.string == "block_actions" else {
            return problem("the payload is not a block_actions interaction")
        }
        guard let u = p["user"]?.object, let userID = u["id"]?.string, isID(userID) else {
            return problem("the payload names no user")
        }
        let teamID = p["team"]?["id"]?.string ?? u["team_id"]?.string
        let name = u["username"]?.string ?? u["name"]?.string ?? userID
        let user = ChatEndpoints.User(
            platform: "slack", team: teamID.flatMap { isID($0) ? $0 : nil }, user: userID, name: String(name.prefix(80))
        )
        guard let actions = p["actions"]?.array, let first = actions.first?.object,
            let actionID = first["action_id"]?.string, !actionID.isEmpty, actionID.utf8.count <= 255
        else { return problem("the payload names no action") }
        let blockID = first["block_id"]?.string.flatMap { $0.utf8.count <= 255 ? $0 : nil } ?? ""
        let action = ChatAction.named(actionID: actionID)
        var episode: Int64? = nil
        if action != nil {
            guard let value = first["value"]?.string, let id = ChatEndpoints.strictInteger(value, in: 1...Int64.max)
            else { return problem("the button's value is not an alert id") }
            episode = id
        }
        let responseURL = p["response_url"]?.string ?? ""
        if action != nil, responseURL.isEmpty { return problem("the payload has no response_url") }
        let message = p["message"]?.object
        let blocks = (message?["blocks"]?.array ?? []).compactMap(\.object).prefix(maxBlocks)
        let text = ChatText.clip(message?["text"]?.string ?? "", 3000)
        return .success(
            SlackPress(
                user: user, action: action, episode: episode, actionID: actionID, blockID: blockID,
                responseURL: responseURL, blocks: Array(blocks), text: text))
    }

    /// A Slack id (`U024BE7LH`, `T0001`): letters, digits, `_`, `-` and `.`, at most 64.
    static func isID(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy {
                ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 95 || $0 == 45
                    || $0 == 46
            }
    }

    /// `Acked by <@U024BE7LH>, 09:50 UTC`.
    static func line(_ action: ChatAction, user: String, at: Int64) -> String {
        let verb = action.doneVerb
        return "\(verb) by <@\(user)>, \(ChatText.clock(at)) UTC"
    }

    /// What to post to `response_url` once the action was taken (or not).
    func reply(to outcome: ChatEndpoints.Outcome, action: ChatAction, at: Int64) -> Data {
        switch outcome {
        case .done:
            let line = Self.line(action, user: user.user, at: at)
            return Self.encode(
                Update(
                    replaceOriginal: true, text: ChatText.clip(line + (text.isEmpty ? "" : "\n" + text), 3000),
                    blocks: updatedBlocks(line: line, action: action)))
        case .refused(let why), .failed(let why):
            return Self.encode(Ephemeral(text: ChatEscape.slack(why)))
        }
    }

    /// The message updated in place (`replace_original`).
    struct Update: Encodable {
        var replaceOriginal: Bool
        var text: String
        var blocks: [[String: JSONValue]]

        enum CodingKeys: String, CodingKey {
            case text, blocks
            case replaceOriginal = "replace_original"
        }
    }

    /// An answer to the presser alone; the message stays as it is.
    struct Ephemeral: Encodable {
        var responseType = "ephemeral"
        var replaceOriginal = false
        var text: String

        enum CodingKeys: String, CodingKey {
            case text
            case responseType = "response_type"
            case replaceOriginal = "replace_original"
        }
    }

    /// As `JSONSerialization` wrote it: `/` escaped, keys in no particular order (Slack reads any).
    static func encode(_ value: some Encodable) -> Data {
        (try? JSONEncoder().encode(value)) ?? Data("{}".utf8)
    }

    /// The message's blocks with the pressed button gone (its actions block too, when that was its
    /// last button) and, where it was, a context line saying who did what when. Block ids stay
    /// unique; still at most 50 blocks.
    func updatedBlocks(line: String, action: ChatAction) -> [[String: JSONValue]] {
        var blocks = self.blocks
        let doneID = String((blockID.isEmpty ? "klaxon" : blockID).prefix(200)) + "-" + action.rawValue
        blocks.removeAll { $0["block_id"]?.string == doneID }
        var at = blocks.count
        if !blockID.isEmpty, let i = blocks.firstIndex(where: { $0["block_id"]?.string == blockID }) {
            at = i + 1
            if var elements = blocks[i]["elements"]?.array {
                elements.removeAll { $0["action_id"]?.string == actionID }
                if elements.isEmpty {
                    blocks.remove(at: i)
                    at = i
                } else {
                    blocks[i]["elements"] = .array(elements)
                }
            }
        }
        let done: [String: JSONValue] = [
            "type": "context", "block_id": .string(doneID), "elements": [["type": "mrkdwn", "text": .string(line)]],
        ]
        blocks.insert(done, at: at)
        while blocks.count > Self.maxBlocks, let last = blocks.lastIndex(where: { $0["block_id"]?.string != doneID }) {
            blocks.remove(at: last)
        }
        return blocks
    }
}
