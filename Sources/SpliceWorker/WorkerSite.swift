import SpliceConcurrency
import SpliceDaemon
import SpliceHTTP
import SpliceMetrics

/// What a worker's operations endpoint serves: `/metrics` (``WorkerMetrics``, `splice_build_info`,
/// `process_*`), `/healthz` (the daemon's actor answers within 2 s), `/readyz` (registered with a
/// coordinator: WELCOME received and the coordinator heard from since).
struct WorkerSite: OperationsSite {
    let metrics = MetricsRegistry()
    let daemon: WorkerDaemon
    let figures: WorkerMetrics
    static let probeWait: Duration = .seconds(2)

    init(daemon: WorkerDaemon, figures: WorkerMetrics, version: String) {
        self.daemon = daemon
        self.figures = figures
        metrics.register(BuildInfo(version: version))
        for source in figures.sources { metrics.register(source) }
        metrics.register(ProcessFigures())
    }

    func liveness() async -> HealthCheck {
        let daemon = self.daemon
        guard await SpliceConcurrency.value(of: Task { await daemon.ping() }, within: Self.probeWait) != nil else {
            return .fail("the worker's main loop did not answer within \(Self.probeWait)")
        }
        return .pass("the main loop answers")
    }

    func readiness() async -> HealthCheck {
        figures.registered.value() == 1 ? .pass("registered with the coordinator")
            : .fail("not registered with a coordinator (no WELCOME yet, or the coordinator fell silent)")
    }

    func page(_ request: HTTPRequest) async -> HTTPResponse? { nil }
}
