import Foundation
import KlaxonCore

/// The receivers' budgets (issue 41, "no storms"): each receiver's `BudgetWindow`, one small row per
/// receiver, changed only inside one transaction that reads it locked, runs the decision, writes it
/// back and applies what the decision did to the alerts folded in the storm (`FoldChanges`, a row
/// per alert and episode). So the count survives a restart, and two daemons on one PostgreSQL
/// database never both spend the window's last message: the second waits on the first's row lock
/// (`SELECT … FOR UPDATE`) and then sees its send. On SQLite the write transaction serialises every
/// writer of the file.
public protocol BudgetStore: Sendable {
    /// Runs `change` on the receiver's window (an empty one when it has none), writes the result
    /// and applies its `changes`, all in one transaction; returns what `change` returned.
    func updateBudget<T: Sendable>(
        receiver: String, now: Int64, _ change: @escaping @Sendable (inout BudgetWindow) -> T
    )
        async throws -> T
    /// The alerts folded in the receiver's current storm, counted by subject (one read).
    func foldTally(receiver: String) async throws -> FoldTally
}

/// The budgets' tables and statements, the same text in both dialects.
public enum BudgetSQL {
    /// Binds receiver, updated (ms): makes sure the row exists (so that it can be locked).
    public static let ensure = """
        INSERT INTO receiver_budgets (receiver, state, updated_at) VALUES ($1, '{}', $2)
        ON CONFLICT (receiver) DO NOTHING
        """

    /// Binds receiver. PostgreSQL appends `FOR UPDATE`.
    public static let find = "SELECT state FROM receiver_budgets WHERE receiver = $1"

    /// Binds state, updated (ms), receiver.
    public static let save = "UPDATE receiver_budgets SET state = $1, updated_at = $2 WHERE receiver = $3"

    /// Binds receiver.
    public static let clear = "DELETE FROM budget_folds WHERE receiver = $1"

    /// Binds receiver, alert, episode, subject, station, place, folded (ms).
    public static let add = """
        INSERT INTO budget_folds (receiver, alert, episode, subject, station, place, folded_at, resolved)
        VALUES ($1, $2, $3, $4, $5, $6, $7, false)
        ON CONFLICT (receiver, alert, episode) DO NOTHING
        """

    /// Binds receiver, alert.
    public static let heard = "DELETE FROM budget_folds WHERE receiver = $1 AND alert = $2"

    /// Binds receiver, alert, episode.
    public static let resolved = """
        UPDATE budget_folds SET resolved = true WHERE receiver = $1 AND alert = $2 AND episode = $3
        """

    /// Binds receiver: subject, still firing, in all, distinct stations still firing.
    public static let tally = """
        SELECT subject, sum(CASE WHEN resolved THEN 0 ELSE 1 END), count(*),
            count(DISTINCT CASE WHEN resolved THEN NULL ELSE station END)
        FROM budget_folds WHERE receiver = $1
        GROUP BY subject ORDER BY min(folded_at), subject
        """

    /// Binds receiver: the first `FoldTally.placeRows` still firing, in fold order.
    public static let places = """
        SELECT subject, station, place FROM budget_folds WHERE receiver = $1 AND NOT resolved
        ORDER BY folded_at, alert, episode LIMIT \(FoldTally.placeRows)
        """
}
