internal import CZeroMQ
internal import CZeroMQShims
internal import Foundation

/// One libzmq socket. Not thread safe, like the socket it owns: it is created, used and closed by
/// one thread (an endpoint's socket thread), and it keeps its `WireContext` alive.
final class RawSocket {
    /// The socket handle; nil once closed.
    private var handle: UnsafeMutableRawPointer?
    /// One reusable zmq_msg_t for receiving (libzmq needs it at a stable address).
    private let frame: UnsafeMutablePointer<zmq_msg_t>
    let context: WireContext

    init(context: WireContext, type: Int32) throws(WireError) {
        guard let handle = zmq_socket(context.handle, type) else {
            throw WireError.zmq("zmq_socket")
        }
        self.handle = handle
        self.context = context
        frame = .allocate(capacity: 1)
    }

    deinit {
        close()
        frame.deallocate()
    }

    /// The handle, for the poller. Precondition: the socket is open.
    var pollHandle: UnsafeMutableRawPointer? { handle }

    /// Closes the socket. Pending outbound messages are flushed in the background for up to the
    /// socket's linger period. Idempotent.
    func close() {
        if let handle {
            zmq_close(handle)
            self.handle = nil
        }
    }

    private func open(_ operation: @autoclosure () -> String) throws(WireError) -> UnsafeMutableRawPointer {
        guard let handle else { throw WireError(.closed, "\(operation()): socket closed") }
        return handle
    }

    // MARK: - Options

    /// Sets an integer option; `Value` must be the option's C type (`int` or `int64_t`).
    func set<Value: FixedWidthInteger>(_ option: Int32, _ value: Value, name: String) throws(WireError) {
        var value = value
        let socket = try open("set \(name)")
        guard zmq_setsockopt(socket, option, &value, MemoryLayout<Value>.size) == 0 else {
            throw WireError.zmq("set \(name)")
        }
    }

    func set(_ option: Int32, bytes: Data, name: String) throws(WireError) {
        let socket = try open("set \(name)")
        let rc = bytes.withUnsafeBytes { zmq_setsockopt(socket, option, $0.baseAddress, $0.count) }
        guard rc == 0 else { throw WireError.zmq("set \(name)") }
    }

    /// Reads an integer option; `Value` must be the option's C type (`int` or `int64_t`).
    func get<Value: FixedWidthInteger>(_ option: Int32, as _: Value.Type, name: String) throws(WireError) -> Value {
        let socket = try open("get \(name)")
        var value = Value.zero
        var size = MemoryLayout<Value>.size
        guard zmq_getsockopt(socket, option, &value, &size) == 0 else { throw WireError.zmq("get \(name)") }
        return value
    }

    func getString(_ option: Int32, name: String) throws(WireError) -> String {
        let socket = try open("get \(name)")
        var buffer = [CChar](repeating: 0, count: 1024)
        var size = buffer.count
        guard zmq_getsockopt(socket, option, &buffer, &size) == 0 else { throw WireError.zmq("get \(name)") }
        return String(nulTerminated: buffer)
    }

    // MARK: - Endpoints

    func bind(_ endpoint: String) throws(WireError) {
        let socket = try open("bind \(endpoint)")
        guard zmq_bind(socket, endpoint) == 0 else { throw WireError.zmq("bind \(endpoint)") }
    }

    func connect(_ endpoint: String) throws(WireError) {
        let socket = try open("connect \(endpoint)")
        guard zmq_connect(socket, endpoint) == 0 else { throw WireError.zmq("connect \(endpoint)") }
    }

    /// Starts a monitor that publishes `events` on a PAIR socket bound at `address`.
    func monitor(address: String, events: Int32) throws(WireError) {
        let socket = try open("monitor")
        guard zmq_socket_monitor(socket, address, events) == 0 else { throw WireError.zmq("zmq_socket_monitor") }
    }

    func stopMonitor() {
        if let handle { zmq_socket_monitor(handle, nil, 0) }
    }

    // MARK: - Messages

    /// Sends `frames` as one multipart message without blocking. libzmq queues a multipart message
    /// atomically: a failure (`EHOSTUNREACH`, `EAGAIN`) happens on the first frame, before
    /// anything is queued.
    func send(_ frames: [Data]) throws(WireError) {
        let socket = try open("send")
        for (index, frame) in frames.enumerated() {
            let flags = ZMQ_DONTWAIT | (index < frames.count - 1 ? ZMQ_SNDMORE : 0)
            let rc = frame.withUnsafeBytes { zmq_send(socket, $0.baseAddress, $0.count, flags) }
            guard rc >= 0 else { throw WireError.zmq("send") }
        }
    }

    /// A received multipart message, or what made the receiver stop copying it.
    struct Received {
        var frames: [Data] = []
        /// The "User-Id" metadata the ZAP handler attached to the peer's session, if any.
        var userID: String?
        /// Set when the message broke a limit; its frames were drained but not all kept.
        var overLimit: WireRejection.Reason?
        /// Bytes of all its frames, kept or not.
        var totalBytes = 0
        /// An oversized message's request id, read where its payload frame lay (`RequestIDScan`).
        var requestID: String?
    }

    /// Receives one multipart message without blocking; nil when none is waiting. Frames beyond
    /// `maxFrames`, and bytes beyond `maxBytes`, are drained from the socket and not copied. Of an
    /// oversized message the frames before the one that went over are kept (a ROUTER's routing
    /// id: the sender can be answered), and when that one is the frame at `payloadIndex` (the
    /// envelope) its request id is read in place.
    func receive(maxFrames: Int, maxBytes: Int, payloadIndex: Int) throws(WireError) -> Received? {
        let socket = try open("receive")
        var received = Received()
        var more = true
        var index = 0
        while more {
            zmq_msg_init(frame)
            defer { zmq_msg_close(frame) }
            // The first frame may be absent (nothing waiting); the rest of a message is always
            // delivered with its first frame, so they never block.
            if zmq_msg_recv(frame, socket, index == 0 ? ZMQ_DONTWAIT : 0) < 0 {
                let errno = zmq_errno()
                if index == 0 && errno == EAGAIN { return nil }
                throw WireError.zmq("receive", errno: errno)
            }
            // Ask every frame until one answers: a ROUTER's routing-id frame carries the session's
            // metadata only sometimes (libzmq 4.3 drops it when zmq_poll prefetched the message),
            // the peer's own frames always.
            if received.userID == nil, let userID = zmq_msg_gets(frame, splice_ZMQ_MSG_PROPERTY_USER_ID()) {
                received.userID = String(cString: userID)
            }
            more = zmq_msg_more(frame) != 0
            let size = zmq_msg_size(frame)
            received.totalBytes += size
            if received.overLimit == nil {
                if received.frames.count >= maxFrames {
                    received.overLimit = .tooManyFrames
                } else if received.totalBytes > maxBytes {
                    received.overLimit = .oversized
                    if index == payloadIndex {
                        received.requestID = RequestIDScan.requestID(in: UnsafeRawBufferPointer(start: zmq_msg_data(frame),
                                                                                                 count: size))
                    }
                } else {
                    received.frames.append(Data(bytes: zmq_msg_data(frame), count: size))
                }
            }
            index += 1
        }
        if received.overLimit == .tooManyFrames { received.frames = [] }
        return received
    }
}
