#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking pipe that any thread may signal to wake a thread blocked in `poll(2)` — a socket
/// thread in `zmq_poll`, which polls plain file descriptors alongside sockets. Signals coalesce:
/// one ``drain()`` clears any number of them, and a full pipe already means "wake up".
///
/// For threads. A task waits for a ``WakeSignal`` instead.
package final class WakePipe: Sendable {
    /// Why the pipe could not be made: `pipe(2)` failed with `errno`.
    package struct Failure: Error, CustomStringConvertible {
        /// The `errno` of the failed `pipe(2)` call.
        package let errno: Int32
        package var description: String { "pipe: " + String(cString: strerror(errno)) }
    }

    /// The end the waiting thread polls for reading.
    package let fd: Int32
    private let writeFD: Int32

    /// Opens the pipe, both ends non-blocking and close-on-exec.
    package init() throws(Failure) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Failure(errno: errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        fd = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(fd)
        close(writeFD)
    }

    /// Makes ``fd`` readable until the next ``drain()``. Safe from any thread.
    package func signal() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Clears pending signals (the polling thread only).
    package func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fd, &buffer, buffer.count) > 0 {}
    }
}
