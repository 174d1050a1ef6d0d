import SpliceConcurrency

/// A value that can stand on the right of `key=` in a log line.
///
/// Fields are typed so call sites pass the value itself (`["segment": index]`), never a string
/// assembled for the log. Strings are quoted and secrets redacted by the formatter, not here.
public protocol LogValue: Sendable {
    /// The unquoted text of the value.
    var logText: String { get }
}

extension String: LogValue {
    public var logText: String { self }
}

extension Substring: LogValue {
    public var logText: String { String(self) }
}

extension Bool: LogValue {
    public var logText: String { self ? "true" : "false" }
}

extension Int: LogValue {
    public var logText: String { String(self) }
}

extension Int32: LogValue {
    public var logText: String { String(self) }
}

extension Int64: LogValue {
    public var logText: String { String(self) }
}

extension UInt32: LogValue {
    public var logText: String { String(self) }
}

extension UInt64: LogValue {
    public var logText: String { String(self) }
}

extension Duration: LogValue {
    /// Whole milliseconds with an `ms` suffix (`1520ms`): integer, so lines stay comparable.
    public var logText: String { String(wholeMilliseconds) + "ms" }
}

/// One rendered `key=value` pair, kept by loggers that carry context fields.
struct LogField: Sendable, Equatable {
    var key: String
    var value: String
    /// An integer or a boolean: written without quotes in JSON.
    var isBare = false
}
