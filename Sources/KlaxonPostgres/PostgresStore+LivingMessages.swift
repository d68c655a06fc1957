import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// The receiver's message for `thread`, nil when it has none.
    public func livingMessage(receiver: String, thread: String) async throws -> LivingMessage? {
        var binds = PostgresBindings(capacity: 2)
        binds.append(receiver)
        binds.append(thread)
        guard let row = try await rows(PostgresQuery(unsafeSQL: LivingMessageSQL.find, binds: binds)).first else {
            return nil
        }
        return LivingMessage(
            receiver: receiver, thread: thread, messageID: try row[0].decode(String.self),
            timeline: LivingMessage.decode(try row[1].decode(String.self)), batch: try row[2].decode(String.self),
            closed: try row[3].decode(Bool.self), createdAt: try row[4].decode(Int64.self),
            updatedAt: try row[5].decode(Int64.self))
    }

    /// Records the receiver's message for its thread, replacing the one recorded before.
    public func saveLivingMessage(_ m: LivingMessage) async throws {
        var binds = PostgresBindings(capacity: 8)
        binds.append(m.receiver)
        binds.append(m.thread)
        binds.append(m.messageID)
        binds.append(LivingMessage.encode(m.timeline))
        binds.append(m.batch)
        binds.append(m.closed)
        binds.append(m.createdAt)
        binds.append(m.updatedAt)
        _ = try await execute(PostgresQuery(unsafeSQL: LivingMessageSQL.save, binds: binds))
    }

    /// Who acknowledged the episode, and when (kept after it resolves, until the alert's next ack).
    public func episodeAck(alert: AlertKey, episode: Int64) async throws -> Ack? {
        var binds = PostgresBindings(capacity: 4)
        binds.append(alert.rule)
        binds.append(alert.station)
        binds.append(alert.metric)
        binds.append(episode)
        guard let row = try await rows(PostgresQuery(unsafeSQL: LivingMessageSQL.ack, binds: binds)).first else {
            return nil
        }
        return Ack(transitionID: episode, by: try row[0].decode(String.self), at: try row[1].decode(Int64.self))
    }
}
