public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// When a child started with Foundation's `Process` ended, and how, learnt by `waitpid` on a
/// thread of its own.
///
/// Foundation learns of a child's end through a socket its run-loop thread watches with
/// `select(2)`, which cannot watch a descriptor numbered 1024 or more. The test process holds over
/// a thousand descriptors at times (hundreds of in-process coordinators, workers and PostgreSQL
/// connections at once); a child started then never stopped "running" for Foundation, and
/// `waitUntilExit()` spun on a cooperative thread forever (a general pass hung in a clean-clone run
/// with `select` watching 1,216 descriptors). So: `waitpid` here. Should Foundation reap the child
/// first (its descriptor was low enough), its own figures are taken once it says so.
public final class ChildExit: Sendable {
    private struct Ended: Sendable {
        var status: Int32
        var signalled: Bool
    }

    private let ended = Mutex<Ended?>(nil)
    public let pid: Int32

    /// Starts watching `process`, which has been started.
    public init(_ process: Process) {
        pid = process.processIdentifier
        let box = UncheckedProcess(process)
        let thread = Thread { [self] in
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(self.pid, &status, 0) } while reaped == -1 && errno == EINTR
            if reaped == self.pid {
                // WIFSIGNALED / WTERMSIG / WEXITSTATUS: the signal in the low 7 bits, else the code in bits 8-15.
                let signal = status & 0x7f
                self.ended.withLock { $0 = signal != 0 ? Ended(status: signal, signalled: true)
                                                  : Ended(status: (status >> 8) & 0xff, signalled: false) }
            } else {
                // Foundation reaped it: its answer comes once its run-loop thread has handled that.
                while box.process.isRunning { usleep(5_000) }
                self.ended.withLock { $0 = Ended(status: box.process.terminationStatus,
                                            signalled: box.process.terminationReason == .uncaughtSignal) }
            }
        }
        thread.name = "splice-tests.child-exit"
        thread.start()
    }

    /// Whether the child has ended (and been reaped).
    public var hasExited: Bool { ended.withLock { $0 != nil } }

    /// Its exit code, or the number of the signal that ended it; nil while it runs.
    public var status: (code: Int32, signalled: Bool)? {
        ended.withLock { $0.map { ($0.status, $0.signalled) } }
    }

    /// Blocks the calling thread (never a cooperative one) until the child has ended.
    public func waitBlocking() -> (code: Int32, signalled: Bool) {
        while true {
            if let status { return status }
            usleep(2_000)
        }
    }

    /// Waits (polling) until the child has ended; nil after `timeout`.
    public func wait(within timeout: Duration) async -> (code: Int32, signalled: Bool)? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return status
    }
}

/// A `Process` handed to the watching thread, which only asks it thread-safe questions.
private struct UncheckedProcess: @unchecked Sendable {
    let process: Process
    init(_ process: Process) { self.process = process }
}
