import Synchronization

/// A state behind a lock and the tasks suspended until it lets them go: the one copy of the
/// "dictionary of continuations" that ``WakeSignal``, ``Latch``, ``InFlightWork`` and the CLI's
/// `ShutdownSignal` are built on.
///
/// ``wait(orIfCancelled:until:)`` returns at once when `ready` gives a value for the state as it
/// is; otherwise the task suspends until ``resumeAll(_:)`` hands every waiting task a value, or
/// until it is cancelled, when it gets the `cancelled` value instead — so a waiter in a task group
/// never blocks the group. `ready` and the bodies run under the lock and must not suspend;
/// continuations are resumed after the lock is released.
///
///     let stopped = AsyncCondition<Bool, Void>(false)
///     stopped.resumeAll { isStopped, _ in isStopped = true; return () }  // wakes every waiter
///     await stopped.wait { $0 }                                          // returns at once now
package final class AsyncCondition<State: Sendable, Value: Sendable>: Sendable {
    private struct Guarded {
        var state: State
        var waiters: [UInt64: CheckedContinuation<Value, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private let guarded: Mutex<Guarded>

    /// A condition over `state` with nobody waiting.
    package init(_ state: State) {
        guarded = Mutex(Guarded(state: state))
    }

    /// Reads or changes the state; wakes nobody.
    package func withLock<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        guarded.withLock { body(&$0.state) }
    }

    /// Changes the state and, when `body` returns a value, resumes every task waiting at that moment
    /// with it. `waiting` tells `body` whether any task is waiting.
    package func resumeAll(_ body: (_ state: inout State, _ waiting: Bool) -> Value?) {
        let (value, waiters) = guarded.withLock { guarded -> (Value?, [CheckedContinuation<Value, Never>]) in
            guard let value = body(&guarded.state, !guarded.waiters.isEmpty) else { return (nil, []) }
            defer { guarded.waiters.removeAll() }
            return (value, Array(guarded.waiters.values))
        }
        guard let value else { return }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// The value `ready` gives for the state as the task arrives or, when it gives none, the value of
    /// the next ``resumeAll(_:)`` that wakes the waiters (`ready` is not asked again); `cancelled`
    /// when the calling task is cancelled first.
    package func wait(orIfCancelled cancelled: Value, until ready: (_ state: inout State) -> Value?) async -> Value {
        let id = guarded.withLock { guarded in
            guarded.nextID += 1
            return guarded.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
                let now = guarded.withLock { guarded -> Value? in
                    if let value = ready(&guarded.state) { return value }
                    if Task.isCancelled { return cancelled }
                    guarded.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            guarded.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: cancelled)
        }
    }
}

extension AsyncCondition where Value == Void {
    /// Returns at once when `ready` holds for the state as the task arrives, else at the next
    /// ``resumeAll(_:)`` that wakes the waiters, or when the calling task is cancelled.
    package func wait(until ready: (_ state: inout State) -> Bool) async {
        await wait(orIfCancelled: ()) { state in ready(&state) ? () : nil }
    }
}
