import SpliceHTTP
import SpliceLog
import Testing

@testable import splice

/// The flags `splice coordinator` and `splice worker` share: the operators' endpoint and logging.
@Suite("Daemon options")
struct DaemonOptionsTests {
    @Test("--metrics-endpoint: loopback defaults, SPLICE_METRICS_ENDPOINT, an address or off")
    func metricsEndpoint() throws {
        let worker = ["--spool", "/tmp"]
        #expect(try parse([], as: CoordinatorCommand.self).metricsEndpoint.address?.description == "127.0.0.1:9450")
        #expect(try parse(worker, as: WorkerCommand.self).metricsEndpoint.address?.description == "127.0.0.1:9451")
        let environment = ["SPLICE_METRICS_ENDPOINT": "0.0.0.0:19450"]
        let fromEnvironment = try parse([], as: CoordinatorCommand.self, environment: environment)
        #expect(fromEnvironment.metricsEndpoint.address?.description == "0.0.0.0:19450")
        #expect(fromEnvironment.metricsEndpoint.address?.isLoopback == false)
        #expect(try parse(["--metrics-endpoint", "off"], as: CoordinatorCommand.self, environment: environment)
            .metricsEndpoint == .off)
        #expect(try parse(worker + ["--metrics-endpoint", "[::1]:9999"], as: WorkerCommand.self)
            .metricsEndpoint.address?.description == "[::1]:9999")
    }

    @Test("the data endpoint follows the workers endpoint's host unless given: loopback stays loopback")
    func dataEndpoint() throws {
        #expect(try parse([], as: CoordinatorCommand.self).dataEndpoint == "tcp://*:7452")
        let loopback = try parse(["--workers-endpoint", "tcp://127.0.0.1:17850"], as: CoordinatorCommand.self)
        #expect(loopback.dataEndpoint == "tcp://127.0.0.1:7452")
        #expect(try parse(["--workers-endpoint", "tcp://[::1]:7450"], as: CoordinatorCommand.self).dataEndpoint
            == "tcp://[::1]:7452")
        #expect(try parse(["--workers-endpoint", "ipc:///run/splice/w"], as: CoordinatorCommand.self).dataEndpoint
            == "tcp://127.0.0.1:7452")
        #expect(try parse(["--workers-endpoint", "tcp://127.0.0.1:17850", "--data-endpoint", "tcp://10.0.0.1:9000"],
                          as: CoordinatorCommand.self).dataEndpoint == "tcp://10.0.0.1:9000")
    }

    @Test("a bad --metrics-endpoint is a usage error that says what is expected", arguments: [
        "9450", "metrics.example:9450", "127.0.0.1:99999", "127.0.0.1",
    ])
    func badEndpoint(word: String) {
        let message = usageError(["--metrics-endpoint", word], for: CoordinatorCommand.self)
        #expect(message?.hasPrefix("--metrics-endpoint: '\(word)' is not HOST:PORT with an IP address") == true,
                "\(message ?? "no error")")
    }

    @Test("--log-level and --log-format, or their variables, reconfigure the daemon's logger")
    func logging() throws {
        let flags = try parse(["--spool", "/tmp", "--log-level", "debug", "--log-format", "json"], as: WorkerCommand.self)
        let logger = flags.daemon.logger(from: Logger())
        #expect(logger.level == .debug && logger.format == .json)
        let environment = ["SPLICE_LOG_LEVEL": "warn", "SPLICE_LOG_FORMAT": "json"]
        let fromEnvironment = try parse([], as: CoordinatorCommand.self, environment: environment)
        #expect(fromEnvironment.daemon.logger(from: Logger()).level == .warning)
        #expect(fromEnvironment.daemon.logger(from: Logger()).format == .json)
        #expect(try parse([], as: CoordinatorCommand.self).daemon.logger(from: Logger(level: .error)).level == .error)
        #expect(throws: UsageError.self) { _ = try parse(["--log-format", "xml"], as: CoordinatorCommand.self) }
    }

    @Test("help lists every variable a daemon reads, options' and others'")
    func environmentInHelp() {
        let coordinator = HelpFormatter.help(for: [SpliceCommand.self, CoordinatorCommand.self])
        let section = coordinator.components(separatedBy: "ENVIRONMENT:\n").last ?? ""
        for variable in ["SPLICE_DATABASE_URL", "SPLICE_METRICS_ENDPOINT", "SPLICE_LOG_LEVEL", "SPLICE_LOG_FORMAT"] {
            #expect(section.contains("  " + variable), "\(variable) missing from the ENVIRONMENT section")
        }
        #expect(section.contains("Sets --metrics-endpoint."))
        let worker = HelpFormatter.help(for: [SpliceCommand.self, WorkerCommand.self])
        #expect(worker.contains("SPLICE_FFMPEG_LOG") && worker.contains("SPLICE_SLOTS"))
        #expect(worker.contains("(default: 127.0.0.1:9451;"))
    }
}
