import KlaxonCore

/// Signs what a Mattermost message button sends back when it is pressed, so that the press can be
/// verified: Mattermost posts a button's `context` to the integration URL with no signature of its
/// own. `context(action, episode)` is the signed context of one button; the server's
/// `MattermostActions` makes and checks it with a key derived from the Mattermost token (the app
/// wires the two), so no secret is held here.
public struct ChatActionSigner: Sendable {
    public var context: @Sendable (_ action: ChatAction, _ episode: Int64) -> [String: String]

    public init(context: @escaping @Sendable (_ action: ChatAction, _ episode: Int64) -> [String: String]) {
        self.context = context
    }
}
