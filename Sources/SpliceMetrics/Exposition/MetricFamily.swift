/// What a metric family is, as the Prometheus text format 0.0.4 names it in its `# TYPE` line.
public enum MetricType: String, Sendable, Hashable {
    case counter, gauge, histogram, untyped
}

/// One `name="value"` pair of a sample. The value is free text (escaped when rendered); the name
/// must match `[a-zA-Z_][a-zA-Z0-9_]*` and not start with `__`.
public struct MetricLabel: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// One line of a family: the family's name plus `suffix` (`_bucket`, `_sum`, `_count` for a
/// histogram, empty otherwise), its labels in order, and its value.
public struct MetricSample: Sendable, Hashable {
    public var suffix: String
    public var labels: [MetricLabel]
    public var value: Double

    public init(suffix: String = "", labels: [MetricLabel] = [], value: Double) {
        self.suffix = suffix
        self.labels = labels
        self.value = value
    }
}

/// A family as it is exposed at one scrape: `# HELP`, `# TYPE` and its samples. Built by
/// ``Counter``, ``Gauge`` and ``Histogram``, or directly by collectors that read their values at
/// scrape time (a database count, the process's own figures).
public struct MetricFamily: Sendable, Hashable {
    public var name: String
    public var help: String
    public var type: MetricType
    public var samples: [MetricSample]

    /// A family; `name` must be a valid metric name (a programming error otherwise).
    public init(name: String, help: String, type: MetricType, samples: [MetricSample]) {
        precondition(MetricName.isValid(name), "invalid metric name '\(name)'")
        self.name = name
        self.help = help
        self.type = type
        self.samples = samples
    }

    /// A gauge whose samples are given as label values (in `labelNames` order) and values.
    public static func gauge(_ name: String, help: String, labelNames: [String] = [],
                             _ values: [(labels: [String], value: Double)]) -> MetricFamily {
        MetricFamily(name: name, help: help, type: .gauge,
                     samples: values.map { MetricSample(labels: MetricName.labels(labelNames, $0.labels), value: $0.value) })
    }

    /// A gauge with one unlabelled sample.
    public static func gauge(_ name: String, help: String, value: Double) -> MetricFamily {
        gauge(name, help: help, [(labels: [], value: value)])
    }

    /// A counter whose value is read at scrape time (it must only ever grow while the process runs).
    public static func counter(_ name: String, help: String, labelNames: [String] = [],
                               _ values: [(labels: [String], value: Double)]) -> MetricFamily {
        MetricFamily(name: name, help: help, type: .counter,
                     samples: values.map { MetricSample(labels: MetricName.labels(labelNames, $0.labels), value: $0.value) })
    }
}

/// The rules for metric and label names (Prometheus data model).
public enum MetricName {
    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public static func isValid(_ name: String) -> Bool {
        guard let first = name.utf8.first, isLetter(first) || first == UInt8(ascii: "_") || first == UInt8(ascii: ":")
        else { return false }
        return name.utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ":") }
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved for Prometheus itself).
    public static func isValidLabel(_ name: String) -> Bool {
        guard let first = name.utf8.first, isLetter(first) || first == UInt8(ascii: "_"), !name.hasPrefix("__") else {
            return false
        }
        return name.utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    /// Pairs label names with values; the counts must agree (a programming error otherwise).
    static func labels(_ names: [String], _ values: [String]) -> [MetricLabel] {
        precondition(names.count == values.count, "\(names.count) label names but \(values.count) values")
        return zip(names, values).map { MetricLabel($0, $1) }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
