internal import Synchronization

/// A bounded hand-over queue from a socket thread to async consumers.
///
/// The socket thread asks `hasRoom` before reading from its socket and stops reading when the
/// queue is full, so a slow consumer pushes back into libzmq's receive high-water mark and TCP
/// instead of growing memory; `onRoom` wakes the socket thread when a consumer frees a slot.
/// Consumers call `next()`, which returns nil once the queue is finished and empty, or when the
/// waiting task is cancelled.
final class InboundQueue<Element: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Element?, Never>
    }

    private struct State {
        var buffer: [Element] = []
        var head = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var finished = false

        var count: Int { buffer.count - head }

        mutating func pop() -> Element? {
            guard head < buffer.count else { return nil }
            let element = buffer[head]
            head += 1
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 256 && head * 2 >= buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            return element
        }
    }

    private enum Outcome {
        case element(Element, freedRoom: Bool)
        case end
        case wait
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let onRoom: @Sendable () -> Void

    init(capacity: Int, onRoom: @escaping @Sendable () -> Void) {
        self.capacity = max(1, capacity)
        self.onRoom = onRoom
    }

    /// Whether the producer may push another element.
    var hasRoom: Bool { state.withLock { $0.count < capacity } }

    /// Hands `element` to a waiting consumer or buffers it. Elements pushed after `finish()`
    /// are discarded.
    func push(_ element: Element) {
        let waiter = state.withLock { state -> Waiter? in
            if state.finished { return nil }
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.buffer.append(element)
            return nil
        }
        waiter?.continuation.resume(returning: element)
    }

    /// Ends the stream: buffered elements are still delivered, then `next()` returns nil.
    func finish() {
        let waiters = state.withLock { state -> [Waiter] in
            state.finished = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
    }

    /// The elements waiting now, up to `limit`, or — when none is — the next one and whatever
    /// came with it; empty when finished and drained, or when the calling task is cancelled.
    /// One wake-up of the consumer for a burst of messages instead of one each.
    func next(upTo limit: Int) async -> [Element] {
        let ready = take(upTo: limit)
        if !ready.isEmpty { return ready }
        guard let first = await next() else { return [] }
        return [first] + take(upTo: limit - 1)
    }

    private func take(upTo limit: Int) -> [Element] {
        guard limit > 0 else { return [] }
        let (taken, freedRoom) = state.withLock { state -> ([Element], Bool) in
            let wasFull = state.count >= capacity
            var taken: [Element] = []
            while taken.count < limit, let element = state.pop() { taken.append(element) }
            return (taken, wasFull && !taken.isEmpty)
        }
        if freedRoom { onRoom() }
        return taken
    }

    /// The next element; nil when finished and drained, or when the calling task is cancelled.
    func next() async -> Element? {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let outcome = state.withLock { state -> Outcome in
                    let wasFull = state.count >= capacity
                    if let element = state.pop() { return .element(element, freedRoom: wasFull) }
                    if state.finished || Task.isCancelled { return .end }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return .wait
                }
                switch outcome {
                case .element(let element, let freedRoom):
                    continuation.resume(returning: element)
                    if freedRoom { onRoom() }
                case .end:
                    continuation.resume(returning: nil)
                case .wait:
                    break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: nil)
        }
    }
}
