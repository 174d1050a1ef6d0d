import Dispatch
import Synchronization

/// The two crossings between tasks and threads that may block, in one place (SpliceObjectMedia's
/// FFmpeg callbacks cross here too).
package enum ThreadBridge {
    /// Runs `body` as a task and blocks the calling thread until it is done: for callers on a
    /// thread of their own (an FFmpeg callback). The task only awaits — the transfers run on
    /// the transfer threads — so it never holds a cooperative thread for long.
    package static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws(ObjectStoreError) -> T)
        throws(ObjectStoreError) -> T
    {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<T, ObjectStoreError>?>(nil)
        Task {
            let result: Result<T, ObjectStoreError>
            do throws(ObjectStoreError) { result = .success(try await body()) } catch { result = .failure(error) }
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0! }.get()
    }

    /// Runs the blocking `body` on `queue` (a Dispatch queue, not the cooperative pool) and
    /// awaits its result.
    static func offPool<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws(ObjectStoreError) -> T)
        async throws(ObjectStoreError) -> T
    {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ObjectStoreError>, Never>) in
            queue.async {
                continuation.resume(returning: Result { () throws(ObjectStoreError) -> T in try body() })
            }
        }
        return try result.get()
    }
}
