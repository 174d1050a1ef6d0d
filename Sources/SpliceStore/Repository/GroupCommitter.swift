import Synchronization

/// Group commit: callers submit one item each and wait; items that arrive while a batch is being
/// written are written together in the next one. An idle committer writes a lone item at once,
/// so batching adds no latency; under load, many items share one round trip and one fsync.
/// `package`: the coordinator batches lease extensions with it too.
package final class GroupCommitter<Input: Sendable, Output: Sendable>: Sendable {
    package typealias Flush = @Sendable ([Input]) async throws -> [Output]

    private struct Waiter {
        var input: Input
        var continuation: CheckedContinuation<Output, any Error>
    }

    private struct State {
        var queue: [Waiter] = []
        var flushing = false
    }

    private let state = Mutex(State())
    private let maxBatch: Int
    private let flush: Flush

    /// `flush` writes a batch (at most `maxBatch` items) and answers in the same order.
    package init(maxBatch: Int, flush: @escaping Flush) {
        self.maxBatch = maxBatch
        self.flush = flush
    }

    /// Queues `input` and returns its answer once the batch holding it is written.
    package func submit(_ input: Input) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            let startFlushing = state.withLock { state in
                state.queue.append(Waiter(input: input, continuation: continuation))
                guard !state.flushing else { return false }
                state.flushing = true
                return true
            }
            if startFlushing { Task { await self.drain() } }
        }
    }

    /// Writes batches until the queue is empty; only one drain runs at a time.
    private func drain() async {
        while true {
            let batch: [Waiter] = state.withLock { state in
                guard !state.queue.isEmpty else {
                    state.flushing = false
                    return []
                }
                let batch = Array(state.queue.prefix(maxBatch))
                state.queue.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                let outputs = try await flush(batch.map(\.input))
                precondition(outputs.count == batch.count, "a flush must answer every item")
                for (waiter, output) in zip(batch, outputs) { waiter.continuation.resume(returning: output) }
            } catch {
                for waiter in batch { waiter.continuation.resume(throwing: error) }
            }
        }
    }
}
