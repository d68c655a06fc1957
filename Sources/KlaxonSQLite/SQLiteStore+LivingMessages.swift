import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// The receiver's message for `thread`, nil when it has none.
    public func livingMessage(receiver: String, thread: String) async throws -> LivingMessage? {
        try await reader.read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: LivingMessageSQL.find), arguments: [receiver, thread])
            else { return nil }
            return LivingMessage(
                receiver: receiver, thread: thread, messageID: row[0],
                timeline: LivingMessage.decode(row[1] as String?), batch: row[2], closed: (row[3] as Int64) != 0,
                createdAt: row[4], updatedAt: row[5])
        }
    }

    /// Records the receiver's message for its thread, replacing the one recorded before.
    public func saveLivingMessage(_ m: LivingMessage) async throws {
        try await requireWriter().write { db in
            try db.execute(
                sql: LivingMessageSQL.save,
                arguments: [
                    m.receiver, m.thread, m.messageID, LivingMessage.encode(m.timeline), m.batch, m.closed ? 1 : 0,
                    m.createdAt, m.updatedAt,
                ])
        }
    }

    /// Who acknowledged the episode, and when (kept after it resolves, until the alert's next ack).
    public func episodeAck(alert: AlertKey, episode: Int64) async throws -> Ack? {
        try await reader.read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: LivingMessageSQL.ack),
                    arguments: [alert.rule, alert.station, alert.metric, episode])
            else { return nil }
            return Ack(transitionID: episode, by: row[0], at: row[1])
        }
    }
}
