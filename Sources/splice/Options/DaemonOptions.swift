import SpliceHTTP
import SpliceLog
import SpliceDaemon

/// What `splice coordinator` and `splice worker` share besides their own flags: where their
/// operators' endpoint listens and how they log.
struct DaemonOptions: Sendable {
    /// `--metrics-endpoint`, with the daemon's own default port; `serves` says what is there.
    static func metricsEndpoint(default address: String, serves: String) -> Option<MetricsEndpointSetting> {
        Option("metrics-endpoint", valueName: "host:port",
               help: "Where " + serves + " are served over HTTP (read-only); `off` for nowhere. Binds this "
                   + "machine only unless given another address, e.g. 0.0.0.0:PORT in a container.",
               default: MetricsEndpointSetting(parsing: address), environment: "SPLICE_METRICS_ENDPOINT",
               expected: "HOST:PORT with an IP address (127.0.0.1:9450, [::1]:9450, 0.0.0.0:9450) or off"
        ) { MetricsEndpointSetting(parsing: $0) }
    }

    static let logLevel = Option<LogLevel>(
        "log-level", valueName: "level", help: "The least important lines logged: debug, info, warning or error.",
        environment: Logger.levelEnvironmentVariable, expected: "one of debug, info, warning, error"
    ) { LogLevel(name: $0) }
    static let logFormat = Option<Logger.Format>(
        "log-format", valueName: "format",
        help: "How log lines are written on standard error: logfmt (key=value) or json (one object per line).",
        environment: Logger.formatEnvironmentVariable)

    static let arguments: [any ArgumentDeclaration] = [logLevel, logFormat]

    let logLevel: LogLevel?
    let logFormat: Logger.Format?

    init(_ arguments: ParsedArguments) {
        logLevel = arguments[Self.logLevel]
        logFormat = arguments[Self.logFormat]
    }

    /// The command's logger with these settings.
    func logger(from base: Logger) -> Logger {
        base.reconfigured(level: logLevel, format: logFormat)
    }
}

extension Logger.Format: ArgumentValue {}
