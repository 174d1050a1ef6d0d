import Synchronization

/// CPU time spent on the helper threads of one export (a ladder's rung encoders,
/// ``RenditionThread``), which the export thread's own clock does not see. Each thread adds its
/// whole CPU time as it exits; the segment's CPU figure is the export thread's plus this.
final class ThreadCPUTally: Sendable {
    private let total = Atomic<Int64>(0)

    /// Adds the calling thread's CPU time so far (call as the thread's last act).
    func addCallingThread() {
        total.add(threadCPUMicroseconds(), ordering: .relaxed)
    }

    var microseconds: Int64 { total.load(ordering: .relaxed) }
}
