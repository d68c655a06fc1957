import Foundation
import KlaxonCore

/// Who acknowledged an alert, and which of its transitions.
public struct Ack: Sendable, Equatable {
    public var transitionID: Int64
    public var by: String
    /// UTC seconds.
    public var at: Int64

    public init(transitionID: Int64, by: String, at: Int64) {
        self.transitionID = transitionID
        self.by = by
        self.at = at
    }
}
