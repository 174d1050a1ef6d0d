/// Wakes a task's loop early: ``signal()`` ends the current (or else the next) ``wait(upTo:)``.
/// Signals are not counted — several before a wait wake it once — because every loop that uses
/// one re-reads its state after waking anyway.
///
/// For tasks. A thread blocked in `poll(2)` (a socket thread in `zmq_poll`) is woken by a
/// ``WakePipe`` instead.
package final class WakeSignal: Sendable {
    /// Whether a signal came while nobody waited.
    private let pending = AsyncCondition<Bool, Void>(false)

    package init() {}

    /// Wakes every task waiting now, or else the next one to wait. Safe from any thread.
    package func signal() {
        pending.resumeAll { pending, waiting in
            if waiting { return () }
            pending = true
            return nil
        }
    }

    /// Returns at the next signal (at once if one came since the last wait), after `timeout`, or
    /// when the calling task is cancelled.
    package func wait(upTo timeout: Duration) async {
        _ = await withDeadline(timeout) { () async -> Void? in
            await self.pending.wait { pending in
                defer { pending = false }
                return pending
            }
        }
    }
}
