import Foundation
import KlaxonCore
import KlaxonServer
import KlaxonStore

/// `klaxon watches` and `klaxon watches remove ID` once the command line is read (issue 43): every
/// person's watches, with who made each, for the operator.
public enum WatchCommands {
    /// One watch in `klaxon watches -o json`: as `GET /api/v1/watches` shows it.
    public typealias Row = APIWatch

    /// `klaxon watches`: every watch, by id, as text or JSON.
    public static func list(store: any WatchStore, json: Bool, output: CommandOutput = .standard) async throws
        -> Int32
    {
        let rows = try await store.allWatches().map(Row.init)
        if json {
            try output.json(rows)
            return 0
        }
        if rows.isEmpty { output.line("(no watches)") }
        for r in rows {
            // Owner names come from chat: hostile text, escaped for the terminal.
            output.line(
                TerminalText.safe(
                    "\(r.id)  \(r.owner) (\(r.owner_name)) #\(r.number)  \(r.what)  → \(r.destination)  since \(r.created)"
                ))
        }
        return 0
    }

    /// `klaxon watches remove ID`: removes a watch (its alerts resolve at the daemon's next evaluation).
    public static func remove(id: Int64, store: any WatchStore, output: CommandOutput = .standard) async throws
        -> Int32
    {
        guard let w = try await store.removeWatch(id: id) else { throw UserError("no watch \(id)") }
        output.line(TerminalText.safe("removed watch \(w.id) of \(w.owner.key): \(w.target.words)"))
        return 0
    }
}
