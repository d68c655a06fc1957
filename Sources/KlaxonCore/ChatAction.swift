/// What the buttons of a chat message do (Slack Block Kit buttons, Mattermost message buttons,
/// Telegram inline buttons): the
/// one set of names the message that carries them and the endpoint that receives a press share.
/// A button acts on an alert's episode, by its id (`ack 123`).
public enum ChatAction: String, Sendable, CaseIterable {
    /// Acknowledge the episode, as `ack ID` does: no reminders or escalation until it resolves.
    case ack
    /// Silence the alert's rule at its station for an hour, as `silence RULE STATION 1h` does.
    case silence1h = "silence_1h"
    /// Stop the watch the alert belongs to, as its owner's `unwatch N` does (issue 43).
    case unwatch
    /// Mute the watch the alert belongs to for a day: a silence of its rule (issue 43).
    case mute24h = "mute_24h"

    /// The button's label.
    public var label: String {
        switch self {
        case .ack: "Ack"
        case .silence1h: "Silence 1h"
        case .unwatch: "Stop watching"
        case .mute24h: "Mute 24h"
        }
    }

    /// What was done, as the message and the answer to a press say it (`Acked by @ana, 09:50 UTC`).
    public var doneVerb: String {
        switch self {
        case .ack: "Acked"
        case .silence1h: "Silenced for 1h"
        case .unwatch: "Stopped watching"
        case .mute24h: "Muted for 24h"
        }
    }

    /// The name of a Mattermost button (`ack`, `silence`, `unwatch`, `mute`), with the alert's
    /// position after it.
    public var buttonName: String {
        switch self {
        case .ack: "ack"
        case .silence1h: "silence"
        case .unwatch: "unwatch"
        case .mute24h: "mute"
        }
    }

    /// The buttons under an alert: a person's watch has *Stop watching* and *Mute 24h* (its owner's
    /// to press); any other alert *Ack* and *Silence 1h*.
    public static func buttons(for t: Transition) -> [ChatAction] {
        t.labels[Routing.watchLabel] != nil ? [.unwatch, .mute24h] : [.ack, .silence1h]
    }

    /// How long `silence1h` silences, in seconds.
    public static let silenceSeconds: Int64 = 3600
    /// How long `mute24h` mutes a watch, in seconds.
    public static let muteSeconds: Int64 = 86_400

    /// The name of a button that only opens a link (Slack still reports its press; nothing is done).
    public static let open = "open"

    /// A Slack `action_id` unique in its message: the action's name, a dot, and the alert's position
    /// in the message (`ack.3`). A message may show several alerts, each with its own buttons.
    public func actionID(position: Int) -> String { "\(rawValue).\(position)" }

    /// The action an `action_id` names (the part before the first dot); nil for anything else,
    /// including `open.N`.
    public static func named(actionID: String) -> ChatAction? {
        guard actionID.utf8.count <= 255 else { return nil }
        let name = actionID.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return ChatAction(rawValue: String(name))
    }
}
