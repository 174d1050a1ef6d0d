import Synchronization

/// The body of a streamed response (``HTTPResponse/stream``): bytes a handler — or whatever it
/// hands the stream to — writes while the connection lasts, such as Server-Sent Events. The
/// server sends them as they come, without a length, and closes the connection once the stream
/// is finished. Writes never block: they queue, and a client that does not read (more than
/// ``HTTPServer/Limits/maxStreamBufferBytes`` queued) is disconnected instead of growing memory.
///
///     let stream = HTTPResponseStream()
///     stream.onClose { subscription.cancel() }
///     return HTTPResponse(status: .ok, headers: [("Content-Type", "text/event-stream")], stream: stream)
///     …
///     if !stream.write(Array("data: hello\n\n".utf8)) { /* the client has gone */ }
///     stream.finish()
public final class HTTPResponseStream: Sendable {
    private struct State {
        var queued: [UInt8] = []
        var finished = false
        var closed = false
        var connection: (id: UInt64, shared: ServerLoop.Shared, limit: Int)?
        var closeActions: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Queues `bytes` for the client; false once the client has gone, the stream is finished, or
    /// the client fell too far behind (the connection is then dropped).
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        let (accepted, wake) = state.withLock { state -> (Bool, (UInt64, ServerLoop.Shared)?) in
            guard !state.closed && !state.finished else { return (false, nil) }
            state.queued += bytes
            guard let connection = state.connection else { return (true, nil) }
            return (true, (connection.id, connection.shared))
        }
        if let (id, shared) = wake { shared.streamReady(id) }
        return accepted
    }

    /// Ends the body: the server sends what is queued, then closes the connection.
    public func finish() {
        let wake = state.withLock { state -> (UInt64, ServerLoop.Shared)? in
            guard !state.finished else { return nil }
            state.finished = true
            return state.connection.map { ($0.id, $0.shared) }
        }
        if let (id, shared) = wake { shared.streamReady(id) }
    }

    /// Whether the client can no longer receive anything (it left, was dropped, or the server closed).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `action` once when the connection ends (at once if it has ended already).
    public func onClose(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.closed { return true }
            state.closeActions.append(action)
            return false
        }
        if runNow { action() }
    }

    // MARK: - The server's side

    /// The loop took the response for connection `id`; writes from now on wake it.
    func attach(id: UInt64, shared: ServerLoop.Shared, limit: Int) {
        let queued = state.withLock { state -> Bool in
            state.connection = (id, shared, limit)
            return !state.queued.isEmpty || state.finished
        }
        if queued { shared.streamReady(id) }
    }

    /// What is queued, whether the stream is finished, and whether the client fell further behind
    /// than the limit allows (`pending`: bytes the loop holds but could not send yet).
    func take(pending: Int) -> (bytes: [UInt8], finished: Bool, overflowed: Bool) {
        state.withLock { state in
            let limit = state.connection?.limit ?? Int.max
            let overflowed = pending + state.queued.count > limit
            defer { state.queued.removeAll() }
            return (overflowed ? [] : state.queued, state.finished, overflowed)
        }
    }

    /// The connection ended: later writes are refused and the close actions run.
    func closed() {
        let actions = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            state.queued = []
            defer { state.closeActions = [] }
            return state.closeActions
        }
        for action in actions { action() }
    }
}
