internal import Foundation
internal import SpliceConcurrency
internal import Synchronization

/// Where a send goes.
enum SendTarget: Sendable {
    case peer(WirePeer)
    /// The most recently heard-from connection of an authenticated key.
    case key(CurvePublicKey)
}

/// What the async API asks an endpoint's socket thread to do. Every command carries the
/// continuation its caller waits on; a command that can no longer run is failed, never dropped.
enum EndpointCommand: Sendable {
    case send([Data], to: SendTarget, reply: CheckedContinuation<Result<Void, WireError>, Never>)
    /// Several sends in order, answered together: one wake-up of the socket thread for all.
    case sendAll([(frames: [Data], target: SendTarget)], reply: CheckedContinuation<[Result<Void, WireError>], Never>)
    /// Sends `farewell` to every connection of `key`, then forgets them; replies with their count.
    case disconnect(key: CurvePublicKey, farewell: [Data]?, reply: CheckedContinuation<Int, Never>)
    case close(linger: Duration?, reply: CheckedContinuation<Void, Never>?)

    /// Answers the command as if the endpoint were closed.
    func failClosed() {
        switch self {
        case .send(_, _, let reply): reply.resume(returning: .failure(.endpointClosed))
        case .sendAll(let sends, let reply): reply.resume(returning: sends.map { _ in .failure(.endpointClosed) })
        case .disconnect(_, _, let reply): reply.resume(returning: 0)
        case .close(_, let reply): reply?.resume()
        }
    }
}

/// The thread-safe meeting point between an endpoint's async API and its socket thread:
/// a command queue plus a wake-up signal one way, the inbound queue and events the other way.
final class EndpointChannel: Sendable {
    let wake: WakePipe
    let inbound: InboundQueue<WireDelivery>
    let events: AsyncStream<WireEvent>.Continuation
    let counters: WireCounters
    private let commands = Mutex<(queue: [EndpointCommand], closed: Bool)>(([], false))

    init(inboundCapacity: Int, events: AsyncStream<WireEvent>.Continuation, counters: WireCounters) throws(WireError) {
        let wake: WakePipe
        do {
            wake = try WakePipe()
        } catch {
            throw WireError(.system, error.description, errno: error.errno)
        }
        self.wake = wake
        self.inbound = InboundQueue(capacity: inboundCapacity) { wake.signal() }
        self.events = events
        self.counters = counters
    }

    /// Queues `command` for the socket thread and wakes it; fails the command if the thread has
    /// already stopped.
    func submit(_ command: EndpointCommand) {
        let accepted = commands.withLock { state -> Bool in
            if state.closed { return false }
            state.queue.append(command)
            return true
        }
        if accepted { wake.signal() } else { command.failClosed() }
    }

    /// The commands queued since the last call (socket thread).
    func takeCommands() -> [EndpointCommand] {
        commands.withLock { state in
            defer { state.queue.removeAll(keepingCapacity: true) }
            return state.queue
        }
    }

    /// Marks the channel closed, ends the streams and fails every command still queued
    /// (socket thread, once, as it stops).
    func shutDown() {
        let leftovers = commands.withLock { state -> [EndpointCommand] in
            state.closed = true
            defer { state.queue.removeAll() }
            return state.queue
        }
        inbound.finish()
        events.finish()
        for command in leftovers { command.failClosed() }
    }
}
