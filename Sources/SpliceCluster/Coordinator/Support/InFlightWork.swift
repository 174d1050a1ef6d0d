import Synchronization
import SpliceWire

/// Counts tasks a service started and has not seen finish, so a graceful shutdown can wait for
/// them (commits to be answered, API requests to be replied to) before closing anything.
final class InFlightWork: Sendable {
    private struct State {
        var count = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    init() {}

    /// Runs `work` in a new task, counted until it returns.
    func start(_ work: @escaping @Sendable () async -> Void) {
        state.withLock { $0.count += 1 }
        Task {
            await work()
            self.finished()
        }
    }

    private func finished() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no counted task is running (at once when none is), or when the calling task
    /// is cancelled. Work started by counted work before it finished is waited for too.
    func drained() async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.count == 0 || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// `drained()`, giving up after `timeout`; false when work was still running then.
    func drained(within timeout: Duration) async -> Bool {
        await withDeadline(timeout) { () async -> Bool? in
            await self.drained()
            return true
        } ?? false
    }
}
