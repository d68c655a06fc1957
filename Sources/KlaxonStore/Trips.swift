import Foundation
import KlaxonCore

/// Errors about trips, worded for people.
public struct TripError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
