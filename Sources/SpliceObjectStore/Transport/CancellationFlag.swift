import Foundation
import Synchronization

/// Set once to stop a request: libcurl's progress callback reads it during the transfer (and
/// aborts it), and a retry's backoff wait wakes up on it instead of sleeping on.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    /// Wakes a thread waiting in ``sleep(for:)``.
    private let wake = NSCondition()

    /// Whether ``cancel()`` was called.
    var isCancelled: Bool { flag.load(ordering: .acquiring) }

    /// Stops the request (idempotent).
    func cancel() {
        flag.store(true, ordering: .releasing)
        wake.lock()
        wake.broadcast()
        wake.unlock()
    }

    /// Blocks the calling (transfer) thread for `duration`, or until cancelled; false if cancelled.
    func sleep(for duration: Duration) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Double(duration.components.seconds)
            + Double(duration.components.attoseconds) / 1e18)
        wake.lock()
        defer { wake.unlock() }
        while !isCancelled {
            if !wake.wait(until: deadline) { break }
        }
        return !isCancelled
    }
}
