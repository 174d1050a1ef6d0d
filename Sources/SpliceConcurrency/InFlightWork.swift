/// Counts tasks a service started and has not seen finish, so a graceful shutdown can wait for
/// them (commits to be answered, API requests to be replied to) before closing anything.
package final class InFlightWork: Sendable {
    /// How many counted tasks are running.
    private let running = AsyncCondition<Int, Void>(0)

    package init() {}

    /// Runs `work` in a new task, counted until it returns.
    package func start(_ work: @escaping @Sendable () async -> Void) {
        running.withLock { $0 += 1 }
        Task {
            await work()
            self.running.resumeAll { count, _ in
                count -= 1
                return count == 0 ? () : nil
            }
        }
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
