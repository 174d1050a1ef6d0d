import Synchronization

/// Runs work (a reading loop, a round of a loop) in a task that another task can stop — even
/// before it has started — and wait for: how a service stops reading its endpoint without
/// closing it. Once stopped, every later ``run(_:)`` is cancelled at once.
package final class StoppableTask: Sendable {
    private let state = Mutex<(stopped: Bool, task: Task<Void, Never>?)>((false, nil))

    package init() {}

    /// Runs `body` until it returns, ``stop()`` is called, or the calling task is cancelled.
    package func run(_ body: @escaping @Sendable () async -> Void) async {
        let task = Task { await body() }
        let stoppedAlready = state.withLock { state -> Bool in
            state.task = task
            return state.stopped
        }
        if stoppedAlready { task.cancel() }
        await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
    }

    /// Cancels the body and waits until it has returned.
    package func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.stopped = true
            return state.task
        }
        task?.cancel()
        await task?.value
    }
}
