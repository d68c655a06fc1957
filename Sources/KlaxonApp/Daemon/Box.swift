import Synchronization

/// A value set from a callback and read later.
package final class Box<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    package init(_ value: Value) { mutex = Mutex(value) }
    package func set(_ value: Value) { mutex.withLock { $0 = value } }
    package var value: Value { mutex.withLock { $0 } }
}
