import Synchronization

/// Counts tasks a service started and has not seen finish, so a graceful shutdown can wait for
/// them (commits to be answered, API requests to be replied to) before closing anything.
final class InFlightWork: Sendable {
    private struct State {
        var count = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
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
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no counted task is running (at once when none is). Work started by counted
    /// work before it finished is waited for too.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
