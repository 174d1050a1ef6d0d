import Dispatch
import SpliceConcurrency

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM turned into something a running command can observe, instead of the
/// default action of killing the process mid-write.
///
/// A command polls ``signal`` between steps, or awaits ``wait()`` next to its work:
///
///     try await withThrowingTaskGroup(of: Void.self) { group in
///         group.addTask { try await session.export() }
///         group.addTask { if await context.shutdown.wait() != nil { session.cancel() } }
///         try await group.next()
///         group.cancelAll()
///     }
///
/// Signals arrive through Dispatch signal sources on a private queue, never through the default
/// action, so the process ends only when the command returns (or on a second signal, see
/// ``CommandRunner``).
final class ShutdownSignal: Sendable {
    private struct State {
        var received: [Int32] = []
        var handlers: [UInt64: @Sendable (_ signal: Int32, _ count: Int) -> Void] = [:]
        var nextToken: UInt64 = 0
    }

    /// What has been received; ``wait()``ers are woken with the first signal.
    private let state = AsyncCondition<State, Int32?>(State())

    /// A signal that only ``trigger(_:)`` fires (tests, or a command stopping its own helpers).
    init() {}

    /// Routes `signals` (by default SIGINT and SIGTERM) of this process to a new instance, and
    /// returns once the kernel delivers them there. Call once, early; the sources live as long as
    /// the process.
    static func installed(for signals: [Int32] = [SIGINT, SIGTERM]) async -> ShutdownSignal {
        let shutdown = ShutdownSignal()
        let queue = DispatchQueue(label: "splice.shutdown-signal")
        for number in signals {
            // Ignored until the source is registered, when libdispatch installs its own handler
            // (on Linux it forwards the signal to a signalfd): no window where it kills the process.
            _ = Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                // `data` counts deliveries coalesced since the last event; each one counts.
                for _ in 0..<max(1, source.data) { shutdown.trigger(number) }
            }
            await withCheckedContinuation { registered in
                source.setRegistrationHandler { registered.resume() }
                source.resume()  // The event handler retains the source, which keeps it alive.
            }
        }
        return shutdown
    }

    /// The first signal received, or `nil` while none has been.
    var signal: Int32? {
        state.withLock { $0.received.first }
    }

    /// How many signals have been received (a second Ctrl-C means "stop now").
    var count: Int {
        state.withLock { $0.received.count }
    }

    /// Records `signal`, wakes every ``wait()`` on the first one and calls every handler.
    func trigger(_ signal: Int32) {
        var handlers: [@Sendable (_ signal: Int32, _ count: Int) -> Void] = []
        var count = 0
        state.resumeAll { state, _ in
            state.received.append(signal)
            handlers = Array(state.handlers.values)
            count = state.received.count
            // The first signal is the answer to every wait; later ones wake nobody.
            guard count == 1 else { return .none }
            return .some(signal)
        }
        for handler in handlers { handler(signal, count) }
    }

    /// Suspends until the first signal and returns it (at once if one came already). Returns `nil`
    /// if the waiting task is cancelled first, so a waiter in a task group never blocks the group.
    func wait() async -> Int32? {
        await state.wait(orIfCancelled: nil) { state in state.received.first.map { .some($0) } }
    }

    /// Calls `handler` on every signal from now on, with the signal and how many have arrived.
    /// Returns a token for ``removeHandler(_:)``.
    @discardableResult
    func onSignal(_ handler: @escaping @Sendable (_ signal: Int32, _ count: Int) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextToken += 1
            state.handlers[state.nextToken] = handler
            return state.nextToken
        }
    }

    func removeHandler(_ token: UInt64) {
        _ = state.withLock { $0.handlers.removeValue(forKey: token) }
    }
}
