import Foundation
public import SpliceConcurrency
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Wakes a poller when PostgreSQL sends a NOTIFY on one of its channels.
///
/// A wake-up carries no work: notifications are lost while the connection is down, so whoever
/// listens must still poll the tables (on a timer, and after every wake-up). After each
/// (re)connection the listener sends a wake-up with no channel, meaning "anything may have been
/// missed, look now". The session lives on a thread of its own that waits in `poll(2)`.
public final class PostgresListener: Sendable {
    /// One wake-up: the channel notified, or nil right after (re)connecting.
    public struct WakeUp: Sendable, Equatable {
        public var channel: String?
        public init(channel: String?) { self.channel = channel }
    }

    /// The wake-ups, newest kept when the consumer falls behind (they are interchangeable).
    public let wakeUps: AsyncStream<WakeUp>
    private let state: State

    /// What the listening thread shares with the listener.
    private final class State: Sendable {
        let stopped = Atomic<Bool>(false)
        let continuation: AsyncStream<WakeUp>.Continuation
        init(continuation: AsyncStream<WakeUp>.Continuation) { self.continuation = continuation }
    }

    /// Starts listening on `channels` (reconnecting with `backoff` whenever the session drops).
    public init(configuration: ConnectionConfiguration, channels: [String],
                backoff: Backoff = .transactionRetry) {
        let (stream, continuation) = AsyncStream.makeStream(of: WakeUp.self, bufferingPolicy: .bufferingNewest(16))
        wakeUps = stream
        let state = State(continuation: continuation)
        self.state = state
        let thread = Thread {
            PostgresListener.listen(configuration: configuration, channels: channels, backoff: backoff, state: state)
        }
        thread.name = "splice.store.listener"
        thread.start()
    }

    deinit {
        stop()
    }

    /// Stops listening; the stream finishes within a fraction of a second.
    public func stop() {
        state.stopped.store(true, ordering: .releasing)
    }

    /// The listening loop. The `RawConnection` is confined to this thread.
    private static func listen(configuration: ConnectionConfiguration, channels: [String], backoff: Backoff,
                               state: State) {
        var connection: RawConnection?
        var failures = 0
        while !state.stopped.load(ordering: .acquiring) {
            guard let session = connection, session.isHealthy else {
                connection = nil
                let fresh = RawConnection(configuration: configuration)
                do {
                    try fresh.connect()
                    for channel in channels {
                        try fresh.executeScript("LISTEN " + PostgresQuery.quoteIdentifier(channel))
                    }
                    connection = fresh
                    failures = 0
                    state.continuation.yield(WakeUp(channel: nil))
                } catch {
                    failures += 1
                    sleep(backoff.delay(attempt: failures), unless: state)
                }
                continue
            }
            var descriptor = pollfd(fd: session.socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 200) > 0 else { continue }
            do {
                for channel in try session.takeNotifications() {
                    state.continuation.yield(WakeUp(channel: channel))
                }
            } catch {
                connection = nil
            }
        }
        connection?.close()
        state.continuation.finish()
    }

    /// Sleeps in short steps so that `stop()` is honoured promptly.
    private static func sleep(_ duration: Duration, unless state: State) {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline, !state.stopped.load(ordering: .acquiring) {
            usleep(50_000)
        }
    }
}
