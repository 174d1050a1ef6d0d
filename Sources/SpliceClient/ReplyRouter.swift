import SpliceConcurrency
import Synchronization
import SpliceWire

/// Hands each reply to the call that sent its request id. One call may send its request several
/// times (a fresh id each time) and takes the first reply to any of them; a reply whose id no
/// call is waiting for (an answer to a call that already gave up) is skipped and counted.
final class ReplyRouter: Sendable {
    private struct State {
        var mailboxes: [String: ReplyMailbox] = [:]
        var skipped = 0
    }

    private let state = Mutex(State())

    /// Routes replies carrying `id` to `mailbox` until `forget` is called.
    func expect(_ id: String, in mailbox: ReplyMailbox) {
        state.withLock { $0.mailboxes[id] = mailbox }
    }

    func forget(_ ids: [String]) {
        state.withLock { state in
            for id in ids { state.mailboxes[id] = nil }
        }
    }

    /// Delivers a reply that arrived with `id`; counts it as skipped when nobody waits for it.
    func deliver(_ reply: APIReply, id: String?) {
        let mailbox = state.withLock { state -> ReplyMailbox? in
            guard let id, let mailbox = state.mailboxes[id] else {
                state.skipped += 1
                return nil
            }
            return mailbox
        }
        mailbox?.post(.success(reply))
    }

    /// Ends every waiting call with `error` (the coordinator refused the handshake: no reply can come).
    func failAll(_ error: SpliceClientError) {
        let mailboxes = state.withLock { Array($0.mailboxes.values) }
        var seen = Set<ObjectIdentifier>()
        for mailbox in mailboxes where seen.insert(ObjectIdentifier(mailbox)).inserted {
            mailbox.post(.failure(error))
        }
    }

    /// Replies skipped because no call was waiting for their id.
    var skippedReplies: Int { state.withLock { $0.skipped } }
}

/// The replies (or a failure) that have arrived for one call, in order, and at most one task
/// waiting for the next of them.
///
/// A wait ends in exactly one way, decided under the lock: a reply (``post(_:)`` takes the
/// waiter), or its deadline or cancellation (they take it). Racing the wait against a timer in
/// a task group lost a reply that came as the deadline passed: the reply was handed to the wait,
/// the group returned the timer's nil and dropped it — and a coordinator answering only that send
/// was never heard (the late-reply client test failed under load).
final class ReplyMailbox: Sendable {
    private struct State {
        var queued: [Result<APIReply, SpliceClientError>] = []
        var waiter: (wait: UInt64, continuation: CheckedContinuation<Result<APIReply, SpliceClientError>?, Never>)?
        /// The last wait begun, and the last one whose deadline passed (or was cancelled).
        var begun: UInt64 = 0
        var ended: UInt64 = 0
    }

    private let state = Mutex(State())

    func post(_ result: Result<APIReply, SpliceClientError>) {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.queued.append(result)
                return nil as CheckedContinuation<Result<APIReply, SpliceClientError>?, Never>?
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: result)
    }

    /// The next reply, or nil when `timeout` passes (or the task is cancelled) first.
    func next(within timeout: Duration) async -> Result<APIReply, SpliceClientError>? {
        let wait = state.withLock { state in
            state.begun += 1
            return state.begun
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            end(wait)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Result<APIReply, SpliceClientError>?? in
                    if !state.queued.isEmpty { return .some(state.queued.removeFirst()) }
                    if state.ended >= wait || Task.isCancelled { return .some(nil) }
                    state.waiter = (wait, continuation)
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            end(wait)
        }
    }

    /// Ends wait number `wait` with nil, unless a reply already ended it (or it has not begun
    /// waiting yet: then it sees `ended` and does not).
    private func end(_ wait: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<APIReply, SpliceClientError>?, Never>? in
            state.ended = max(state.ended, wait)
            guard let waiter = state.waiter, waiter.wait == wait else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: nil)
    }
}
