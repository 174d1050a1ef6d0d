internal import Synchronization

/// A value behind a mutex, in a class so closures and tasks can share it (`Mutex` itself is
/// non-copyable and cannot be captured).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}
