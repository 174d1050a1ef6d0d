import Synchronization

/// Counts tasks a service started and has not seen finish, so a graceful shutdown can wait for
/// them (commits to be answered, API requests to be replied to) before closing anything — or,
/// when the work has become pointless (a coordinator that is no longer the active one), cancel
/// them all.
package final class InFlightWork: Sendable {
    /// How many counted tasks are running.
    private let running = AsyncCondition<Int, Void>(0)
    /// The running tasks, by a number of their own, for ``cancelAll()``.
    private let tasks = Mutex<(next: UInt64, running: [UInt64: Task<Void, Never>], cancelled: Bool)>((0, [:], false))

    package init() {}

    /// Runs `work` in a new task, counted until it returns. After ``cancelAll()`` the task starts
    /// cancelled.
    package func start(_ work: @escaping @Sendable () async -> Void) {
        running.withLock { $0 += 1 }
        tasks.withLock { state in
            state.next += 1
            let number = state.next
            // Made under the lock: its own removal (another thread) waits until it is recorded.
            let task = Task {
                await work()
                _ = self.tasks.withLock { $0.running.removeValue(forKey: number) }
                self.running.resumeAll { count, _ in
                    count -= 1
                    return count == 0 ? () : nil
                }
            }
            state.running[number] = task
            if state.cancelled { task.cancel() }
        }
    }

    /// Cancels every counted task, and every one started from now on.
    package func cancelAll() {
        let running = tasks.withLock { state -> [Task<Void, Never>] in
            state.cancelled = true
            return Array(state.running.values)
        }
        for task in running { task.cancel() }
    }

    /// Returns once no counted task is running (at once when none is), or when the calling task
    /// is cancelled. Work started by counted work before it finished is waited for too.
    package func drained() async {
        await running.wait { $0 == 0 }
    }

    /// ``drained()``, giving up after `timeout`; false when work was still running then.
    package func drained(within timeout: Duration) async -> Bool {
        await withDeadline(timeout) { () async -> Bool? in
            await self.drained()
            return true
        } ?? false
    }
}
