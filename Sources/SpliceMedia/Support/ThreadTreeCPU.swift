internal import CSpliceSystem
import Glibc

/// The CPU time of a thread and of every thread it starts after this is made — a ladder's rung
/// threads and the codecs' own worker threads (x264's, libavcodec's frame threads), running or
/// exited — from a perf task-clock counter that new threads inherit. Nil where the kernel
/// refuses one (perf_event_paranoid 3; a container's seccomp profile); the caller then falls
/// back to the threads it can clock itself.
final class ThreadTreeCPU {
    private let descriptor: Int32

    /// Starts counting on the calling thread; nil when the kernel gives no counter.
    init?() {
        let fd = splice_cpu_counter_open()
        guard fd >= 0 else { return nil }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Microseconds counted so far; nil if the counter cannot be read.
    var microseconds: Int64? {
        let nanoseconds = splice_cpu_counter_read(descriptor)
        return nanoseconds < 0 ? nil : nanoseconds / 1000
    }

    /// Whether this machine gives counters at all (tests that depend on one say so).
    static var isAvailable: Bool { ThreadTreeCPU() != nil }
}
