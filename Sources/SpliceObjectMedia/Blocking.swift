import Dispatch
import SpliceObjectStore
import Synchronization

/// The one crossing from a thread that may block (FFmpeg's, a media thread, a Dispatch queue) to
/// the object store's async API: the work runs as a task, which only awaits (the transfers run
/// on the store's own threads), while the calling thread waits. Never call it from a task on
/// Swift's cooperative pool: it would hold one of the pool's few threads while its own task
/// needs one.
enum Blocking {
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws(ObjectStoreError) -> T)
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
}
