import Synchronization

/// The value `operation` produces, or nil when `timeout` passes first; the loser is cancelled (and
/// waited for: `operation` must return once cancelled). Used for the ZAP decision deadline, API
/// request timeouts, bounded drains and the tests' bounded receives.
package func withDeadline<Value: Sendable>(
    _ timeout: Duration, _ operation: @escaping @Sendable () async -> Value?
) async -> Value? {
    await withTaskGroup(of: Value?.self) { group in
        group.addTask { await operation() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// The value of `task`, or nil when `timeout` passes first — without waiting for the task, which
/// goes on (and may be awaited again). For reads whose answer is worth having late but must not
/// hold up the caller: a scrape during a database outage answers in `timeout`, not after the
/// connection attempt gives up.
package func value<Value: Sendable>(of task: Task<Value, Never>, within timeout: Duration) async -> Value? {
    let answer = FirstAnswer()
    return await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
        Task {
            let value = await task.value
            if answer.claim() { continuation.resume(returning: value) }
        }
        Task {
            try? await Task.sleep(for: timeout)
            if answer.claim() { continuation.resume(returning: nil) }
        }
    }
}

/// Lets exactly one of several racers resume a continuation.
private final class FirstAnswer: Sendable {
    private let taken = Atomic<Bool>(false)

    /// True for the first caller only.
    func claim() -> Bool {
        !taken.exchange(true, ordering: .acquiringAndReleasing)
    }
}
