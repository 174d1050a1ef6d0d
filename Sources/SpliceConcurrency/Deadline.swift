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
