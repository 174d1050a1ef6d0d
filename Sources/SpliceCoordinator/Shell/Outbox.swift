import Synchronization
import SpliceWire

/// The worker endpoint's outgoing messages, in the order the state machine produced them. `run`
/// sends whatever has queued up in one hand-off to the socket thread (one wake-up for a whole
/// round of ACKs and ASSIGNs instead of a round trip per message), and reports every failed send
/// (ROUTER_MANDATORY: the peer is gone) with the message it concerned.
final class Outbox: Sendable {
    struct Outgoing: Sendable {
        var message: CoordinatorMessage
        var peer: WirePeer
        var worker: WorkerIdentity
        /// The worker-protocol version to encode it in (the worker's).
        var version: Int
    }

    private struct State {
        var queue: [Outgoing] = []
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// The most messages handed to the socket thread at once.
    static let batchLimit = 256
    private let state = Mutex(State())

    func enqueue(_ message: CoordinatorMessage, to peer: WirePeer, worker: WorkerIdentity,
                 version: Int = WorkerProtocol.version) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.finished else { return nil }
            state.queue.append(Outgoing(message: message, peer: peer, worker: worker, version: version))
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// No more messages: `run` returns once the queued ones are sent.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Sends until `finish()` (or cancellation); `failed` hears about every send that failed,
    /// `sent` about every batch handed to the socket (for the dispatch latency).
    func run(
        on endpoint: CoordinatorWorkerEndpoint, sent: @Sendable ([CoordinatorMessage]) -> Void = { _ in },
        failed: @Sendable (Outgoing, WireError) async -> Void
    ) async {
        while let batch = await nextBatch() {
            let results = await endpoint.send(all: batch.map { ($0.message, $0.peer, $0.version) })
            sent(zip(batch, results).compactMap { outgoing, result in
                if case .success = result { outgoing.message } else { nil }
            })
            for (outgoing, result) in zip(batch, results) {
                if case .failure(let error) = result { await failed(outgoing, error) }
            }
        }
    }

    /// Everything queued (up to `batchLimit`), waiting for something when nothing is; nil once
    /// finished and empty, or when the task is cancelled.
    private func nextBatch() async -> [Outgoing]? {
        while !Task.isCancelled {
            let batch = state.withLock { state -> [Outgoing]? in
                guard !state.queue.isEmpty else { return state.finished ? nil : [] }
                let batch = Array(state.queue.prefix(Self.batchLimit))
                state.queue.removeFirst(batch.count)
                return batch
            }
            guard let batch else { return nil }
            if !batch.isEmpty { return batch }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        guard state.queue.isEmpty, !state.finished, !Task.isCancelled else { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
        }
        return nil
    }
}
