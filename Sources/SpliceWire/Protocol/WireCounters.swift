internal import Synchronization

/// Message counters an endpoint keeps for the services to expose (metrics, `splice workers`).
/// Every message read from the socket is `received`; each then ends up either `delivered` to the
/// caller or `dropped` under one `WireRejection.Reason`, so received = delivered + dropped
/// (plus at most the messages still waiting in the inbound queue).
public final class WireCounters: Sendable {
    /// A point-in-time copy of the counters.
    public struct Snapshot: Sendable, Hashable {
        public var received = 0
        public var delivered = 0
        public var dropped: [WireRejection.Reason: Int] = [:]
        public var sent = 0
        public var sendFailed = 0

        public init() {}

        /// All drops, whatever the reason.
        public var totalDropped: Int { dropped.values.reduce(0, +) }

        /// Drops for one reason.
        public func dropped(_ reason: WireRejection.Reason) -> Int { dropped[reason, default: 0] }
    }

    private let state = Mutex(Snapshot())

    public init() {}

    public func snapshot() -> Snapshot { state.withLock { $0 } }

    func recordReceived() { state.withLock { $0.received += 1 } }
    func recordDelivered() { state.withLock { $0.delivered += 1 } }
    func recordDropped(_ reason: WireRejection.Reason) { state.withLock { $0.dropped[reason, default: 0] += 1 } }
    func recordSent() { state.withLock { $0.sent += 1 } }
    func recordSendFailed() { state.withLock { $0.sendFailed += 1 } }
}
