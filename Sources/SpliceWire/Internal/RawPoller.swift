internal import CZeroMQ

/// `zmq_poll` over a fixed set of sockets and file descriptors. Blocking: use it only on a
/// dedicated thread, never on Swift's cooperative pool.
struct RawPoller {
    private var items: [zmq_pollitem_t] = []

    /// Adds a socket; returns its index.
    mutating func add(socket: UnsafeMutableRawPointer?) -> Int {
        items.append(zmq_pollitem_t(socket: socket, fd: 0, events: 0, revents: 0))
        return items.count - 1
    }

    /// Adds a file descriptor; returns its index.
    mutating func add(fd: Int32) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fd, events: 0, revents: 0))
        return items.count - 1
    }

    /// Chooses whether the item at `index` is polled for input.
    mutating func setReadInterest(_ index: Int, _ interested: Bool) {
        items[index].events = interested ? Int16(ZMQ_POLLIN) : 0
    }

    /// Waits until an item is readable or `timeoutMilliseconds` pass (-1: no timeout).
    /// `EINTR` counts as a timeout.
    mutating func poll(timeoutMilliseconds: Int) throws(WireError) {
        for index in items.indices { items[index].revents = 0 }
        let count = Int32(items.count)
        let rc = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, count, timeoutMilliseconds) }
        if rc < 0 {
            let errno = zmq_errno()
            if errno == EINTR { return }
            throw WireError.zmq("zmq_poll", errno: errno)
        }
    }

    func isReadable(_ index: Int) -> Bool {
        items[index].revents & Int16(ZMQ_POLLIN) != 0
    }
}
