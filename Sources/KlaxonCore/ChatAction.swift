/// What the buttons of a chat message do (Slack Block Kit buttons, Mattermost message buttons): the
/// one set of names the message that carries them and the endpoint that receives a press share.
/// A button acts on an alert's episode, by its id (`ack 123`).
public enum ChatAction: String, Sendable, CaseIterable {
    /// Acknowledge the episode, as `ack ID` does: no reminders or escalation until it resolves.
    case ack
    /// Silence the alert's rule at its station for an hour, as `silence RULE STATION 1h` does.
    case silence1h = "silence_1h"

    /// The button's label.
    public var label: String {
        switch self {
        case .ack: "Ack"
        case .silence1h: "Silence 1h"
        }
    }

    /// How long `silence1h` silences, in seconds.
    public static let silenceSeconds: Int64 = 3600

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
