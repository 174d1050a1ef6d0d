import SpliceCore
import Foundation
import SpliceConcurrency
import SpliceHTTP
import SpliceMetrics
import SpliceStore
import SpliceWire
import SpliceDaemon

/// What the coordinator's operations endpoint serves (docs/deploy.md, Operating a cluster):
///
/// - `/metrics`: the in-memory figures of ``CoordinatorMetrics``; gauges read at scrape time —
///   `splice_jobs{state}` and `splice_queue_segments{priority}` from the database,
///   `splice_workers_connected` and `splice_cluster_slots{state}` from the sessions; the endpoints'
///   message counters; `splice_build_info`; `process_*`.
/// - `/healthz`: the main loop (the shell every worker message goes through, or the standby desk)
///   answers within 2 s — true on a standby too.
/// - `/readyz`: this coordinator is the active one (so a Service routes clients and workers to it),
///   its endpoints are bound and the database answers within 2 s. False on a standby.
/// - `splice_coordinator_active` (1/0), `splice_coordinator_epoch`, `splice_coordinator_terms_total`.
/// - `/` and `/status.json`: ``StatusPage`` and ``StatusReport``.
///
/// During a database outage a scrape still answers within a second: `splice_store_up` is 0 and
/// the two database gauges are left out (absent, not stale: Prometheus then shows a gap rather
/// than a number that is no longer true); everything kept in memory is still there.
final class CoordinatorSite: OperationsSite {
    /// How the coordinator is doing, from ``Coordinator``.
    enum Phase: Sendable {
        case starting
        case running(CoordinatorRuntime)
        case stopping(CoordinatorRuntime)
        case stopped
    }

    let metrics = MetricsRegistry()
    private let phase: @Sendable () -> Phase
    private let version: String
    /// How long a scrape or a probe waits for the database and for the shell.
    static let storeWait: Duration = .seconds(1)
    static let probeWait: Duration = .seconds(2)

    init(version: String, phase: @escaping @Sendable () -> Phase) {
        self.version = version
        self.phase = phase
        metrics.register(BuildInfo(version: version))
        metrics.register { [phase] in
            guard let runtime = Self.runtime(phase()) else { return [] }
            return runtime.metrics.sources.flatMap { $0.collect() }
        }
        metrics.register { [phase] in Self.leadershipFamilies(phase()) }
        metrics.register { [phase] in await Self.storeFamilies(phase()) }
        metrics.register { [phase] in await Self.sessionFamilies(phase()) }
        metrics.register { [phase] in Self.wireFamilies(phase()) }
        metrics.register { [phase] in
            guard let events = Self.runtime(phase())?.events else { return [] }
            return [.gauge("splice_http_event_streams", help: "Server-Sent Event streams of the HTTP API open now.",
                           value: Double(events.openStreams))]
        }
        metrics.register(ProcessFigures())
    }

    // MARK: - Health

    func liveness() async -> HealthCheck {
        switch phase() {
        case .starting:
            return .pass("starting")
        case .stopped:
            return .fail("stopped")
        case .running(let runtime), .stopping(let runtime):
            let term = runtime.role.term
            let desk = runtime.role.desk
            let answered = await SpliceConcurrency.value(of: Task { () -> Bool in
                if let term { await term.shell.ping() } else { await desk.ping() }
            }, within: Self.probeWait)
            guard answered != nil else {
                return .fail("the coordinator's main loop did not answer within \(Self.probeWait)")
            }
            return .pass(term == nil ? "the main loop answers (standing by)" : "the main loop answers")
        }
    }

    func readiness() async -> HealthCheck {
        switch phase() {
        case .starting: return .fail("starting: the endpoints are not bound yet")
        case .stopping: return .fail("stopping")
        case .stopped: return .fail("stopped")
        case .running(let runtime):
            guard runtime.role.term != nil else {
                guard let leader = runtime.role.leader else {
                    return .fail("standing by: the database does not answer, so no active coordinator is known")
                }
                return .fail("standing by: " + (leader.active.map {
                    "the active coordinator is \($0.holderName ?? "unnamed") (\($0.apiEndpoint ?? "?"), epoch \($0.epoch))"
                } ?? "no coordinator is active right now"))
            }
            switch await runtime.operations.overview.outcome(within: Self.probeWait) {
            case .value:
                return .pass("active (epoch \(runtime.role.epoch)); endpoints bound (workers \(runtime.endpoints.workers), "
                             + "api \(runtime.endpoints.api)); database answers")
            case .failed(let reason):
                return .fail("the database does not answer: \(reason)")
            case nil:
                return .fail("the database did not answer within \(Self.probeWait)")
            }
        }
    }

    // MARK: - Pages

    func page(_ request: HTTPRequest) async -> HTTPResponse? {
        switch request.path {
        case "/" where request.query == "part=main":
            // The refreshing part alone (the page's script swaps it in): nothing to run, nothing to style.
            return .body(StatusPage.main(await report()), contentType: "text/html; charset=utf-8",
                         headers: [("Content-Security-Policy", "default-src 'none'")])
        case "/", "/index.html":
            let nonce = StatusPage.nonce()
            return .body(StatusPage.render(await report(), nonce: nonce), contentType: "text/html; charset=utf-8",
                         headers: Array(StatusPage.headers(nonce: nonce).dropFirst()))
        case "/status.json":
            return .body(await report().json() + "\n", contentType: "application/json")
        default:
            return nil
        }
    }

    /// The status as of now.
    func report() async -> StatusReport {
        let now = Date()
        var report = StatusReport(generatedAt: now, version: version, coordinator: "starting", uptimeSeconds: 0,
                                  storeUp: false, jobs: [], workers: [])
        let runtime: CoordinatorRuntime
        switch phase() {
        case .starting, .stopped: return report
        case .running(let running):
            runtime = running
            report.coordinator = "running"
        case .stopping(let stopping):
            runtime = stopping
            report.coordinator = "stopping"
        }
        report.uptimeSeconds = Int((ContinuousClock.now - runtime.startedAt).inSeconds)
        report.leadership = StatusReport.leadership(of: runtime)
        let shell = runtime.role.term?.shell
        let live = await SpliceConcurrency.value(of: Task { await shell?.liveWorkers ?? [] }, within: Self.probeWait) ?? []
        let metrics = runtime.metrics
        report.workers = live.map { StatusReport.worker($0, framesPerSecond: metrics.framesPerSecond($0.session.identity)) }
        async let overview = runtime.operations.overview.outcome(within: Self.storeWait)
        async let jobs = runtime.operations.jobs.outcome(within: Self.storeWait)
        let (counts, summaries) = await (overview, jobs)
        if case .value(let counts) = counts {
            report.pendingSegments = counts.pendingSegments.values.reduce(0, +)
            report.leasedSegments = counts.leasedSegments
        }
        switch summaries {
        case .value(let summaries):
            report.storeUp = true
            var running: [String: [(segment: Int, fraction: Double, cost: Int64)]] = [:]
            for worker in live {
                for attempt in worker.attempts where !attempt.reported {
                    running[attempt.attempt.job.description, default: []].append(
                        (attempt.attempt.segment, attempt.fraction, attempt.cost))
                }
            }
            report.jobs = summaries.map {
                StatusReport.job($0, runningProgress: RunningProgress(running[$0.id.uuidString.lowercased()] ?? []),
                                 now: now)
            }
        case .failed(let reason):
            report.storeError = reason
        case nil:
            report.storeError = "no answer within \(Self.storeWait)"
        }
        return report
    }

    // MARK: - Metrics read at scrape time

    private static func runtime(_ phase: Phase) -> CoordinatorRuntime? {
        switch phase {
        case .running(let runtime), .stopping(let runtime): runtime
        case .starting, .stopped: nil
        }
    }

    /// `splice_jobs{state}`, `splice_queue_segments{priority}`, `splice_store_up`.
    private static func storeFamilies(_ phase: Phase) async -> [MetricFamily] {
        guard let runtime = runtime(phase) else { return [] }
        let up = MetricFamily.gauge("splice_store_up", help: "1 when the database answered this scrape within 1 s, else 0.",
                                    value: 0)
        guard let overview = await runtime.operations.overview.value(within: storeWait) else { return [up] }
        var families = [MetricFamily.gauge("splice_store_up", help: up.help, value: 1)]
        families.append(.gauge(
            "splice_jobs", help: "Jobs in the database by state (succeeded is the store's completed).",
            labelNames: ["state"],
            JobState.allCases.map { (labels: [$0.rawValue], value: Double(overview.jobs[$0] ?? 0)) }))
        let priorities = overview.pendingSegments.isEmpty ? [0: 0] : overview.pendingSegments
        families.append(.gauge(
            "splice_queue_segments", help: "Segments waiting to be leased (pending), by their job's priority.",
            labelNames: ["priority"],
            priorities.sorted { $0.key > $1.key }.map { (labels: [String($0.key)], value: Double($0.value)) }))
        families.append(.gauge("splice_leased_segments", help: "Segments leased to a worker now.",
                               value: Double(overview.leasedSegments)))
        return families
    }

    /// `splice_coordinator_active`, `splice_coordinator_epoch`, `splice_coordinator_terms_total`.
    private static func leadershipFamilies(_ phase: Phase) -> [MetricFamily] {
        guard let runtime = runtime(phase) else { return [] }
        let role = runtime.role
        return [
            .gauge("splice_coordinator_active",
                   help: "1 while this coordinator is the active one (it holds the leadership lease), 0 while it stands by.",
                   value: role.term == nil ? 0 : 1),
            .gauge("splice_coordinator_epoch",
                   help: "The leadership epoch: the one this coordinator holds while active, else the active "
                       + "coordinator's as last read (0 when none is known). Raised by one at every take-over.",
                   value: Double(role.epoch)),
            .counter("splice_coordinator_terms_total",
                     help: "Times this process became the active coordinator (took the lease over).",
                     [(labels: [], value: Double(role.terms))]),
        ]
    }

    /// `splice_workers_connected`, `splice_cluster_slots{state}`.
    private static func sessionFamilies(_ phase: Phase) async -> [MetricFamily] {
        guard let runtime = runtime(phase) else { return [] }
        let shell = runtime.role.term?.shell
        guard let live = await SpliceConcurrency.value(of: Task { await shell?.liveWorkers ?? [] }, within: probeWait)
        else {
            return []
        }
        var slots = ["busy": 0, "idle": 0, "quarantined": 0, "unavailable": 0]
        for worker in live { slots.merge(worker.slotStates, uniquingKeysWith: +) }
        return [
            .gauge("splice_workers_connected", help: "Worker sessions welcomed and heard from recently.",
                   value: Double(live.filter { $0.session.active && !$0.session.silent }.count)),
            .gauge("splice_cluster_slots",
                   help: "Slots of the connected workers by state: busy, idle, quarantined (refusing work after a "
                       + "set-up failure), unavailable (silent or registering).",
                   labelNames: ["state"], slots.sorted { $0.key < $1.key }.map { (labels: [$0.key], value: Double($0.value)) }),
        ]
    }

    /// The endpoints' message counters.
    private static func wireFamilies(_ phase: Phase) -> [MetricFamily] {
        guard let runtime = runtime(phase) else { return [] }
        return EndpointMessages { [("workers", runtime.workerEndpoint.counters.snapshot()),
                                   ("api", runtime.apiEndpoint.counters.snapshot())] }.collect()
    }
}

extension CoordinatorShell {
    /// A trivial call: the actor is not stuck.
    func ping() -> Bool { true }
}
