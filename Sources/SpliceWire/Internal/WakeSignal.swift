internal import Glibc

/// A non-blocking pipe that any thread may signal to wake a socket thread blocked in `zmq_poll`
/// (which polls plain file descriptors alongside sockets). Signals coalesce: one drain clears any
/// number of them, and a full pipe already means "wake up".
final class WakeSignal: Sendable {
    /// The end the socket thread polls.
    let fd: Int32
    private let writeFD: Int32

    init() throws(WireError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw WireError(.system, "pipe: \(String(cString: strerror(errno)))", errno: errno)
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        fd = fds[0]
        writeFD = fds[1]
    }

    deinit {
        Glibc.close(fd)
        Glibc.close(writeFD)
    }

    /// Wakes the poller. Safe from any thread.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Clears pending signals (socket thread only).
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fd, &buffer, buffer.count) > 0 {}
    }
}
