package import SpliceMetrics
package import SpliceWire

/// `splice_messages_received_total{endpoint}` and `splice_messages_dropped_total{endpoint,reason}`
/// of a daemon's ZeroMQ endpoints (the coordinator's workers and API endpoints, a worker's
/// connection to its coordinator): one name, one meaning on every process.
package struct EndpointMessages: MetricSource {
    /// The endpoints to report, by the name their `endpoint` label carries; read at every scrape.
    private let endpoints: @Sendable () -> [(name: String, counters: WireCounters.Snapshot)]

    package init(_ endpoints: @escaping @Sendable () -> [(name: String, counters: WireCounters.Snapshot)]) {
        self.endpoints = endpoints
    }

    package func collect() -> [MetricFamily] {
        var received: [(labels: [String], value: Double)] = []
        var dropped: [(labels: [String], value: Double)] = []
        for (name, counters) in endpoints() {
            received.append((labels: [name], value: Double(counters.received)))
            for (reason, count) in counters.dropped.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                dropped.append((labels: [name, reason.rawValue], value: Double(count)))
            }
        }
        return [
            .counter("splice_messages_received_total", help: "Messages read from this process's ZeroMQ endpoints.",
                     labelNames: ["endpoint"], received),
            .counter("splice_messages_dropped_total",
                     help: "Messages this process's ZeroMQ endpoints dropped (garbled, wrong protocol, out of range…).",
                     labelNames: ["endpoint", "reason"], dropped),
        ]
    }
}
