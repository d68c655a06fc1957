/// The `callback_data` of a Telegram receiver's inline buttons (1 to 64 bytes, Telegram's limit):
/// `ack:123` or `silence_1h:123`, the action and the episode's id. Telegram hands it back in the
/// `callback_query` of a press; a client can send any bytes there, so it is read strictly.
public enum TelegramCallbackData {
    /// Telegram's limit on `callback_data`, in bytes.
    public static let limit = 64

    public static func make(_ action: ChatAction, episode: Int64) -> String { "\(action.rawValue):\(episode)" }

    /// The action and episode of `data`; nil for anything but `ACTION:DIGITS` (a positive id of at
    /// most 18 digits) within the limit.
    public static func read(_ data: String) -> (action: ChatAction, episode: Int64)? {
        guard data.utf8.count <= limit, let colon = data.firstIndex(of: ":"),
            let action = ChatAction(rawValue: String(data[..<colon]))
        else { return nil }
        let digits = data.utf8[data.utf8.index(after: colon)...]
        guard (1...18).contains(digits.count), digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let id = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 48) }
        return id > 0 ? (action, id) : nil
    }
}
