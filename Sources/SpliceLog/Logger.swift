#if canImport(Glibc)
import Glibc
#endif

/// Writes key=value lines to standard error:
///
///     ts=2026-11-30T16:42:08.123Z level=info msg="segment leased" job=4f1c segment=3 attempt=1
///
/// The message is a `StaticString`, so it cannot be assembled from values; everything that varies
/// goes into typed fields. Values are quoted when needed and passwords are redacted (see
/// ``Redaction``). A `Logger` is a value: copy it freely, add context with ``with(_:)``.
public struct Logger: Sendable {
    /// The environment variable that sets the level: `debug`, `info`, `warning` or `error`.
    public static let levelEnvironmentVariable = "SPLICE_LOG_LEVEL"

    /// Lines below this level are dropped.
    public let level: LogLevel
    private let context: [LogField]
    private let sink: any LogSink
    private let clock: LogClock

    /// A logger writing lines at `level` and above to `sink`.
    public init(level: LogLevel = .info, sink: any LogSink = FileDescriptorWriter.standardError,
                clock: LogClock = .system) {
        self.init(level: level, context: [], sink: sink, clock: clock)
    }

    private init(level: LogLevel, context: [LogField], sink: any LogSink, clock: LogClock) {
        self.level = level
        self.context = context
        self.sink = sink
        self.clock = clock
    }

    /// A logger whose level comes from `SPLICE_LOG_LEVEL` in `environment` (default `info`).
    /// An unknown level name is not fatal: the logger uses `info` and says so in a warning line.
    public static func configured(environment: [String: String],
                                  sink: any LogSink = FileDescriptorWriter.standardError,
                                  clock: LogClock = .system) -> Logger {
        guard let name = environment[levelEnvironmentVariable], !name.isEmpty else {
            return Logger(sink: sink, clock: clock)
        }
        if let level = LogLevel(name: name) {
            return Logger(level: level, sink: sink, clock: clock)
        }
        let logger = Logger(sink: sink, clock: clock)
        logger.warning("unknown log level, using info", [
            "variable": levelEnvironmentVariable, "value": name,
            "allowed": LogLevel.allCases.map(\.name).joined(separator: ","),
        ])
        return logger
    }

    /// A logger that adds `fields` to every line after the message, before the line's own fields.
    public func with(_ fields: KeyValuePairs<String, any LogValue>) -> Logger {
        Logger(level: level, context: context + Logger.render(fields), sink: sink, clock: clock)
    }

    /// Whether a line at `level` would be written; check it before computing costly fields.
    public func isEnabled(_ level: LogLevel) -> Bool {
        level >= self.level
    }

    /// Writes a line at `level`.
    public func log(_ level: LogLevel, _ message: StaticString, _ fields: KeyValuePairs<String, any LogValue> = [:]) {
        guard isEnabled(level) else { return }
        let line = LogFormat.line(millisecondsSinceEpoch: clock.millisecondsSinceEpoch(), level: level,
                                  message: message.description, fields: context + Logger.render(fields))
        sink.write(line: line)
    }

    /// Writes a `debug` line.
    public func debug(_ message: StaticString, _ fields: KeyValuePairs<String, any LogValue> = [:]) {
        log(.debug, message, fields)
    }

    /// Writes an `info` line.
    public func info(_ message: StaticString, _ fields: KeyValuePairs<String, any LogValue> = [:]) {
        log(.info, message, fields)
    }

    /// Writes a `warning` line.
    public func warning(_ message: StaticString, _ fields: KeyValuePairs<String, any LogValue> = [:]) {
        log(.warning, message, fields)
    }

    /// Writes an `error` line.
    public func error(_ message: StaticString, _ fields: KeyValuePairs<String, any LogValue> = [:]) {
        log(.error, message, fields)
    }

    private static func render(_ fields: KeyValuePairs<String, any LogValue>) -> [LogField] {
        fields.map { LogField(key: $0.key, value: $0.value.logText) }
    }
}

/// The wall clock a logger stamps lines with; tests inject a fixed one.
public struct LogClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public let millisecondsSinceEpoch: @Sendable () -> Int64

    /// A clock reading `millisecondsSinceEpoch`.
    public init(millisecondsSinceEpoch: @escaping @Sendable () -> Int64) {
        self.millisecondsSinceEpoch = millisecondsSinceEpoch
    }

    /// The system's real-time clock.
    public static let system = LogClock {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
