import Synchronization

/// A value set from a callback and read later.
final class Box<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func set(_ value: Value) { mutex.withLock { $0 = value } }
    var value: Value { mutex.withLock { $0 } }
}
