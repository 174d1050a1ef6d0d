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
    /// How lines are written.
    public enum Format: String, Sendable, CaseIterable {
        /// `ts=… level=info msg="…" key=value` (the default).
        case logfmt
        /// One JSON object per line: `{"ts":"…","level":"info","msg":"…","key":"value"}`, integers
        /// and booleans unquoted.
        case json
    }

    /// The environment variable that sets the level: `debug`, `info`, `warning` or `error`.
    public static let levelEnvironmentVariable = "SPLICE_LOG_LEVEL"
    /// The environment variable that sets the format: `logfmt` or `json`.
    public static let formatEnvironmentVariable = "SPLICE_LOG_FORMAT"

    /// Lines below this level are dropped.
    public let level: LogLevel
    public let format: Format
    private let context: [LogField]
    private let sink: any LogSink
    private let clock: LogClock

    /// A logger writing lines at `level` and above to `sink`.
    public init(level: LogLevel = .info, format: Format = .logfmt, sink: any LogSink = FileDescriptorWriter.standardError,
                clock: LogClock = .system) {
        self.init(level: level, format: format, context: [], sink: sink, clock: clock)
    }

    private init(level: LogLevel, format: Format, context: [LogField], sink: any LogSink, clock: LogClock) {
        self.level = level
        self.format = format
        self.context = context
        self.sink = sink
        self.clock = clock
    }

    /// A logger whose level comes from `SPLICE_LOG_LEVEL` (default `info`) and format from
    /// `SPLICE_LOG_FORMAT` (default `logfmt`) in `environment`. An unknown name is not fatal: the
    /// logger uses the default and says so in a warning line.
    public static func configured(environment: [String: String],
                                  sink: any LogSink = FileDescriptorWriter.standardError,
                                  clock: LogClock = .system) -> Logger {
        let formatName = environment[formatEnvironmentVariable] ?? ""
        let format = Format(rawValue: formatName.lowercased()) ?? .logfmt
        let name = environment[levelEnvironmentVariable] ?? ""
        let level = LogLevel(name: name) ?? .info
        let logger = Logger(level: level, format: format, sink: sink, clock: clock)
        if !formatName.isEmpty && Format(rawValue: formatName.lowercased()) == nil {
            logger.warning("unknown log format, using logfmt", [
                "variable": formatEnvironmentVariable, "value": formatName,
                "allowed": Format.allCases.map(\.rawValue).joined(separator: ","),
            ])
        }
        if !name.isEmpty && LogLevel(name: name) == nil {
            Logger(level: .info, format: format, sink: sink, clock: clock).warning("unknown log level, using info", [
                "variable": levelEnvironmentVariable, "value": name,
                "allowed": LogLevel.allCases.map(\.name).joined(separator: ","),
            ])
        }
        return logger
    }

    /// The same logger (sink, context) at another level or in another format.
    public func reconfigured(level: LogLevel? = nil, format: Format? = nil) -> Logger {
        Logger(level: level ?? self.level, format: format ?? self.format, context: context, sink: sink, clock: clock)
    }

    /// A logger that adds `fields` to every line after the message, before the line's own fields.
    public func with(_ fields: KeyValuePairs<String, any LogValue>) -> Logger {
        Logger(level: level, format: format, context: context + Logger.render(fields), sink: sink, clock: clock)
    }

    /// Whether a line at `level` would be written; check it before computing costly fields.
    public func isEnabled(_ level: LogLevel) -> Bool {
        level >= self.level
    }

    /// Writes a line at `level`.
    public func log(_ level: LogLevel, _ message: StaticString, _ fields: KeyValuePairs<String, any LogValue> = [:]) {
        guard isEnabled(level) else { return }
        let render = format == .json ? LogFormat.jsonLine : LogFormat.line
        let line = render(clock.millisecondsSinceEpoch(), level, message.description, context + Logger.render(fields))
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
        fields.map { field in
            let value = field.value
            return LogField(key: field.key, value: value.logText, isBare: value is Bool || value is any BinaryInteger)
        }
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
