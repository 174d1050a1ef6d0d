/// How important a log line is. A logger drops lines below its level.
public enum LogLevel: Int, Sendable, CaseIterable, Comparable {
    /// Detail for whoever is debugging Splice itself.
    case debug
    /// Normal operation worth a line: a job submitted, a segment leased.
    case info
    /// Something went wrong but Splice carries on: a retry, a dropped message.
    case warning
    /// Something failed and a person may need to act.
    case error

    /// The name written in the `level=` field and accepted by `SPLICE_LOG_LEVEL`.
    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// Parses a level name, ignoring case; `warn` is accepted for `warning`.
    public init?(name: String) {
        let lowered = name.lowercased()
        if lowered == "warn" {
            self = .warning
            return
        }
        guard let level = LogLevel.allCases.first(where: { $0.name == lowered }) else { return nil }
        self = level
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
