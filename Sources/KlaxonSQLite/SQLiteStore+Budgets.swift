import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Runs `change` on the receiver's budget window in one write transaction (SQLite serialises the
    /// file's writers, so two processes never both spend the window's last message), then applies
    /// what it did to the folded alerts.
    public func updateBudget<T: Sendable>(
        receiver: String, now: Int64, _ change: @escaping @Sendable (inout BudgetWindow) -> T
    ) async throws -> T {
        try await requireWriter().write { db in
            try db.cachedStatement(sql: BudgetSQL.ensure).execute(arguments: [receiver, now])
            let text = try String.fetchOne(db.cachedStatement(sql: BudgetSQL.find), arguments: [receiver])
            let before = BudgetWindow.decode(text)
            var window = before
            let result = change(&window)
            let changes = window.changes
            window.changes = FoldChanges()
            if window != before {
                try db.cachedStatement(sql: BudgetSQL.save).execute(arguments: [window.encoded(), now, receiver])
            }
            if changes.clear { try db.cachedStatement(sql: BudgetSQL.clear).execute(arguments: [receiver]) }
            for alert in changes.heard {
                try db.cachedStatement(sql: BudgetSQL.heard).execute(arguments: [receiver, alert])
            }
            for f in changes.add {
                try db.cachedStatement(sql: BudgetSQL.add).execute(
                    arguments: [receiver, f.alert, f.episode, f.subject, f.station, f.place, f.at])
            }
            for r in changes.resolved {
                try db.cachedStatement(sql: BudgetSQL.resolved).execute(arguments: [receiver, r.alert, r.episode])
            }
            return result
        }
    }

    /// The alerts folded in the receiver's current storm, counted by subject.
    public func foldTally(receiver: String) async throws -> FoldTally {
        try await reader.read { db in
            let subjects = try Row.fetchAll(db.cachedStatement(sql: BudgetSQL.tally), arguments: [receiver]).map {
                FoldTally.Subject(subject: $0[0], firing: $0[1], total: $0[2], stations: $0[3])
            }
            let places = try Row.fetchAll(db.cachedStatement(sql: BudgetSQL.places), arguments: [receiver]).map {
                (subject: $0[0] as String, station: $0[1] as String, place: $0[2] as String)
            }
            return FoldTally(subjects: subjects, places: places)
        }
    }
}
