import SpliceWire

/// The worker endpoint's outgoing messages, in the order the state machine produced them, sent
/// one at a time by `run` so a failed send (ROUTER_MANDATORY: the peer is gone) is reported
/// back with the message it concerned.
final class Outbox: Sendable {
    struct Outgoing: Sendable {
        var message: CoordinatorMessage
        var peer: WirePeer
        var worker: WorkerIdentity
    }

    private let stream: AsyncStream<Outgoing>
    private let continuation: AsyncStream<Outgoing>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Outgoing.self)
    }

    func enqueue(_ message: CoordinatorMessage, to peer: WirePeer, worker: WorkerIdentity) {
        continuation.yield(Outgoing(message: message, peer: peer, worker: worker))
    }

    /// No more messages: `run` returns once the queued ones are sent.
    func finish() {
        continuation.finish()
    }

    /// Sends until `finish()` (or cancellation); `failed` hears about every send that threw.
    func run(
        on endpoint: CoordinatorWorkerEndpoint, failed: @Sendable (Outgoing, WireError) async -> Void
    ) async {
        for await outgoing in stream {
            do {
                try await endpoint.send(outgoing.message, to: outgoing.peer)
            } catch {
                await failed(outgoing, error)
            }
        }
    }
}
