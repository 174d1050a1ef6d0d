import Synchronization

/// A value that only goes up while the process runs (a restart starts it at 0 again; `rate()`
/// copes): events counted where they happen. Its name should end in `_total`.
///
///     let failed = Counter("splice_segment_attempts_failed_total", help: "…", labelNames: ["reason"])
///     failed.increment(["lease-expired"])
public final class Counter: MetricSource {
    public let name: String
    public let help: String
    public let labelNames: [String]
    private let values: Mutex<[[String]: Double]>

    /// A counter; `initial` label sets are exposed at 0 before their first event, so a rate over
    /// them exists from the first scrape.
    public init(_ name: String, help: String, labelNames: [String] = [], initial: [[String]] = []) {
        precondition(MetricName.isValid(name), "invalid metric name '\(name)'")
        precondition(labelNames.allSatisfy(MetricName.isValidLabel), "invalid label name in \(labelNames)")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        var start: [[String]: Double] = labelNames.isEmpty ? [[]: 0] : [:]
        for labels in initial {
            precondition(labels.count == labelNames.count, "\(name): label values \(labels) for \(labelNames)")
            start[labels] = 0
        }
        values = Mutex(start)
    }

    /// Adds `amount` (nothing when it is negative or not finite: a counter never goes down).
    public func increment(_ labelValues: [String] = [], by amount: Double = 1) {
        precondition(labelValues.count == labelNames.count, "\(name): label values \(labelValues) for \(labelNames)")
        guard amount >= 0, amount.isFinite else { return }
        values.withLock { $0[labelValues, default: 0] += amount }
    }

    /// The current value of one label set (0 if it never counted).
    public func value(_ labelValues: [String] = []) -> Double {
        values.withLock { $0[labelValues] ?? 0 }
    }

    public func collect() -> [MetricFamily] {
        let current = values.withLock { $0 }
        return [.counter(name, help: help, labelNames: labelNames,
                         current.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { (labels: $0.key, value: $0.value) })]
    }
}

/// A value that goes up and down, set where it changes.
public final class Gauge: MetricSource {
    public let name: String
    public let help: String
    public let labelNames: [String]
    private let values: Mutex<[[String]: Double]>

    public init(_ name: String, help: String, labelNames: [String] = []) {
        precondition(MetricName.isValid(name), "invalid metric name '\(name)'")
        precondition(labelNames.allSatisfy(MetricName.isValidLabel), "invalid label name in \(labelNames)")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        values = Mutex(labelNames.isEmpty ? [[]: 0] : [:])
    }

    /// Sets one label set's value.
    public func set(_ value: Double, _ labelValues: [String] = []) {
        precondition(labelValues.count == labelNames.count, "\(name): label values \(labelValues) for \(labelNames)")
        values.withLock { $0[labelValues] = value }
    }

    /// Adds `amount` (negative to subtract).
    public func add(_ amount: Double, _ labelValues: [String] = []) {
        precondition(labelValues.count == labelNames.count, "\(name): label values \(labelValues) for \(labelNames)")
        values.withLock { $0[labelValues, default: 0] += amount }
    }

    /// The current value of one label set (0 if never set).
    public func value(_ labelValues: [String] = []) -> Double {
        values.withLock { $0[labelValues] ?? 0 }
    }

    public func collect() -> [MetricFamily] {
        let current = values.withLock { $0 }
        return [.gauge(name, help: help, labelNames: labelNames,
                       current.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { (labels: $0.key, value: $0.value) })]
    }
}
