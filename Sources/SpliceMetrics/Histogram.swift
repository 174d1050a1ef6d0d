import Synchronization

/// Observations counted into fixed buckets, exposed as cumulative `_bucket{le="…"}` counts (the
/// last one `le="+Inf"`, equal to `_count`), `_sum` and `_count`. Durations are observed in
/// seconds and the name ends in `_seconds`.
///
///     let encode = Histogram("splice_segment_encode_seconds", help: "…", buckets: [1, 5, 30, 120])
///     encode.observe(3.2)
public final class Histogram: MetricSource {
    /// Counts per bucket (not cumulative; the last is above every bound), the sum and the count.
    public struct Snapshot: Sendable, Hashable {
        public var counts: [UInt64]
        public var sum: Double
        public var count: UInt64
    }

    public let name: String
    public let help: String
    public let labelNames: [String]
    /// Upper bounds, strictly increasing and finite; `+Inf` is implied.
    public let buckets: [Double]
    private let values: Mutex<[[String]: Snapshot]>

    public init(_ name: String, help: String, buckets: [Double], labelNames: [String] = []) {
        precondition(MetricName.isValid(name), "invalid metric name '\(name)'")
        precondition(labelNames.allSatisfy(MetricName.isValidLabel) && !labelNames.contains("le"),
                     "invalid label name in \(labelNames)")
        precondition(!buckets.isEmpty && buckets.allSatisfy(\.isFinite) && zip(buckets, buckets.dropFirst()).allSatisfy(<),
                     "\(name): buckets must be finite and strictly increasing: \(buckets)")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.buckets = buckets
        let empty = Snapshot(counts: Array(repeating: 0, count: buckets.count + 1), sum: 0, count: 0)
        values = Mutex(labelNames.isEmpty ? [[]: empty] : [:])
    }

    /// Counts one observation (a NaN is ignored).
    public func observe(_ value: Double, _ labelValues: [String] = []) {
        precondition(labelValues.count == labelNames.count, "\(name): label values \(labelValues) for \(labelNames)")
        guard !value.isNaN else { return }
        let index = buckets.firstIndex { value <= $0 } ?? buckets.count
        values.withLock { values in
            var snapshot = values[labelValues]
                ?? Snapshot(counts: Array(repeating: 0, count: buckets.count + 1), sum: 0, count: 0)
            snapshot.counts[index] += 1
            snapshot.sum += value
            snapshot.count += 1
            values[labelValues] = snapshot
        }
    }

    /// One label set's counts so far.
    public func snapshot(_ labelValues: [String] = []) -> Snapshot? {
        values.withLock { $0[labelValues] }
    }

    public func collect() -> [MetricFamily] {
        let current = values.withLock { $0 }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        var samples: [MetricSample] = []
        for (labelValues, snapshot) in current {
            let labels = MetricName.labels(labelNames, labelValues)
            var cumulative: UInt64 = 0
            for (bound, count) in zip(buckets.map(ExpositionFormat.format) + ["+Inf"], snapshot.counts) {
                cumulative += count
                samples.append(MetricSample(suffix: "_bucket", labels: labels + [MetricLabel("le", bound)],
                                            value: Double(cumulative)))
            }
            samples.append(MetricSample(suffix: "_sum", labels: labels, value: snapshot.sum))
            samples.append(MetricSample(suffix: "_count", labels: labels, value: Double(snapshot.count)))
        }
        return [MetricFamily(name: name, help: help, type: .histogram, samples: samples)]
    }
}
