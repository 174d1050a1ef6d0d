import Synchronization

/// Something that contributes families to a scrape.
public protocol MetricSource: Sendable {
    /// The families as of now.
    func collect() -> [MetricFamily]
}

/// The metrics one process exposes: sources kept in memory (``Counter``, ``Gauge``,
/// ``Histogram``) and collectors that read their figures when scraped (a database count, the
/// process's memory), rendered in registration order.
///
///     let registry = MetricsRegistry()
///     registry.register(completed)
///     registry.register { [ProcessMetrics.read()].flatMap { $0 } }
///     let text = await registry.exposition()
public final class MetricsRegistry: Sendable {
    private enum Entry: Sendable {
        case source(any MetricSource)
        case collector(@Sendable () async -> [MetricFamily])
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    /// Adds a source kept in memory.
    public func register(_ source: any MetricSource) {
        entries.withLock { $0.append(.source(source)) }
    }

    /// Adds a collector called at every scrape. It must return promptly (bound its own waits):
    /// a scrape waits for every collector.
    public func register(collector: @escaping @Sendable () async -> [MetricFamily]) {
        entries.withLock { $0.append(.collector(collector)) }
    }

    /// Every family, in registration order; the collectors run concurrently.
    public func collect() async -> [MetricFamily] {
        let entries = self.entries.withLock { $0 }
        return await withTaskGroup(of: (Int, [MetricFamily]).self) { group in
            for (index, entry) in entries.enumerated() {
                switch entry {
                case .source(let source): group.addTask { (index, source.collect()) }
                case .collector(let collect): group.addTask { (index, await collect()) }
                }
            }
            var collected: [(Int, [MetricFamily])] = []
            for await result in group { collected.append(result) }
            return collected.sorted { $0.0 < $1.0 }.flatMap(\.1)
        }
    }

    /// The scrape answer's body (``ExpositionFormat``).
    public func exposition() async -> String {
        ExpositionFormat.render(await collect())
    }
}
