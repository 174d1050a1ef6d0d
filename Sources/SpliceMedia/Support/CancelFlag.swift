import Synchronization

/// A thread-safe one-way flag a media thread polls between packets, and actions to run once it
/// is set: what cannot wait for the next poll, such as aborting an upload a muxer is finishing.
/// Public because a ``MediaStorage`` takes one for its uploads.
public final class CancelFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    private let actions = Mutex<[@Sendable () -> Void]>([])

    public init() {}

    /// Sets the flag and runs the actions registered so far (on the calling thread).
    public func set() {
        flag.store(true, ordering: .sequentiallyConsistent)
        let due = actions.withLock { actions in
            defer { actions = [] }
            return actions
        }
        due.forEach { $0() }
    }

    public var isSet: Bool { flag.load(ordering: .sequentiallyConsistent) }

    /// Runs `action` when the flag is set — at once, on this thread, if it is set already.
    public func whenSet(_ action: @escaping @Sendable () -> Void) {
        let now = actions.withLock { actions in
            if isSet { return true }
            actions.append(action)
            return false
        }
        if now { action() }
    }
}
