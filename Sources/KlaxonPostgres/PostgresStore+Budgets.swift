import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// Runs `change` on the receiver's budget window in one transaction that holds the receiver's row
    /// locked (`SELECT … FOR UPDATE`): a second daemon's update waits for the first to commit and
    /// then sees its sends, so the two never both spend the window's last message. What the decision
    /// did to the folded alerts is applied in the same transaction.
    public func updateBudget<T: Sendable>(
        receiver: String, now: Int64, _ change: @escaping @Sendable (inout BudgetWindow) -> T
    ) async throws -> T {
        try await transaction { c in
            try await self.execute(
                PostgresQuery(unsafeSQL: BudgetSQL.ensure, binds: Self.budgetBinds(receiver, now)), on: c)
            let text = try await self.rows(
                PostgresQuery(unsafeSQL: BudgetSQL.find + " FOR UPDATE", binds: Self.budgetBinds(receiver)), on: c
            ).first.map { try $0[0].decode(String.self) }
            let before = BudgetWindow.decode(text)
            var window = before
            let result = change(&window)
            let changes = window.changes
            window.changes = FoldChanges()
            if window != before {
                var save = PostgresBindings(capacity: 3)
                save.append(window.encoded())
                save.append(now)
                save.append(receiver)
                try await self.execute(PostgresQuery(unsafeSQL: BudgetSQL.save, binds: save), on: c)
            }
            if changes.clear {
                try await self.execute(
                    PostgresQuery(unsafeSQL: BudgetSQL.clear, binds: Self.budgetBinds(receiver)), on: c)
            }
            for alert in changes.heard {
                try await self.execute(
                    PostgresQuery(unsafeSQL: BudgetSQL.heard, binds: Self.budgetBinds(receiver, alert)), on: c)
            }
            for f in changes.add {
                var add = PostgresBindings(capacity: 7)
                add.append(receiver)
                add.append(f.alert)
                add.append(f.episode)
                add.append(f.subject)
                add.append(f.station)
                add.append(f.place)
                add.append(f.at)
                try await self.execute(PostgresQuery(unsafeSQL: BudgetSQL.add, binds: add), on: c)
            }
            for r in changes.resolved {
                var resolved = PostgresBindings(capacity: 3)
                resolved.append(receiver)
                resolved.append(r.alert)
                resolved.append(r.episode)
                try await self.execute(PostgresQuery(unsafeSQL: BudgetSQL.resolved, binds: resolved), on: c)
            }
            return result
        }
    }

    /// The alerts folded in the receiver's current storm, counted by subject.
    public func foldTally(receiver: String) async throws -> FoldTally {
        let subjects = try await rows(PostgresQuery(unsafeSQL: BudgetSQL.tally, binds: Self.budgetBinds(receiver))).map
        {
            FoldTally.Subject(
                subject: try $0[0].decode(String.self), firing: Int(try $0[1].decode(Int64.self)),
                total: Int(try $0[2].decode(Int64.self)), stations: Int(try $0[3].decode(Int64.self)))
        }
        let places = try await rows(PostgresQuery(unsafeSQL: BudgetSQL.places, binds: Self.budgetBinds(receiver))).map {
            (
                subject: try $0[0].decode(String.self), station: try $0[1].decode(String.self),
                place: try $0[2].decode(String.self)
            )
        }
        return FoldTally(subjects: subjects, places: places)
    }

    /// Text binds, in order.
    static func budgetBinds(_ texts: String...) -> PostgresBindings {
        var b = PostgresBindings(capacity: texts.count)
        for t in texts { b.append(t) }
        return b
    }

    static func budgetBinds(_ text: String, _ n: Int64) -> PostgresBindings {
        var b = PostgresBindings(capacity: 2)
        b.append(text)
        b.append(n)
        return b
    }
}
