import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceLog
import SpliceStore
import SpliceWire
import SpliceDaemon
import Synchronization

/// What every term of a coordinator process shares: its configuration, database, endpoints and
/// the parts that live as long as the process.
struct TermContext: Sendable {
    let configuration: CoordinatorConfiguration
    /// The database as configured (each term's pool adds its epoch).
    let database: ConnectionConfiguration
    let workerEndpoint: CoordinatorWorkerEndpoint
    let transferPort: TransferPort?
    let metrics: CoordinatorMetrics
    let media: MediaTaskRunner
    let spool: SpoolLayout
    let cleaner: SpoolCleaner
    /// The worker keys the ZAP handler admits; nil without CURVE.
    let enrolledKeys: EnrolledKeys?
    /// What a submission may name (the same for every term: both API doors check through the
    /// term's ``JobSubmissions``).
    let sourceProtocols: SourceProtocols
    let inputRoots: PathRoots
    let outputRoots: PathRoots
    let logger: Logger
}

/// One term of this coordinator as the active one: the epoch it holds, a database pool whose
/// every session writes under that epoch (so the fence refuses them all once another coordinator
/// takes over), and everything that plans, dispatches, commits and stitches — the state machine's
/// shell and the loops. A term starts empty, like a restarted coordinator: the workers register
/// again with what they hold (their running attempts' leases are adopted, their results
/// committed), and the planner, the stitcher and the reaper take up the jobs from the database.
///
/// A term ends gracefully (SIGTERM: its work in flight is drained, the workers are told) or by
/// standing down (the lease ran out, or another coordinator took over): then every session is
/// told STANDBY at once, and the store work in flight is cancelled rather than waited for — it
/// could only be refused by the fence, or hang on a database that does not answer.
final class CoordinatorTerm: Sendable {
    let epoch: Int64
    let repository: JobRepository
    let shell: CoordinatorShell
    let plannerWake: WakeSignal
    /// Checks, keys and records the jobs both API doors submit, under this term's epoch.
    let submissions: JobSubmissions
    /// Retention: `--retention`'s hourly rounds and `splice jobs prune`, under this term's epoch.
    let pruner: JobPruner
    let startedAt = ContinuousClock.now
    private let client: PostgresClient
    private let outbox: Outbox
    private let group: ServiceGroup
    private let sessionsStopped: Latch
    private let logger: Logger
    private let running = Mutex<Task<Void, Never>?>(nil)
    private let outcome = Mutex<(ended: Bool, failure: ServiceGroupError?)>((false, nil))
    /// Opened when the term's services end on their own (one failed).
    let failed = Latch()

    init(epoch: Int64, context: TermContext, lease: LeaseClock) {
        let configuration = context.configuration
        let logger = context.logger
        self.epoch = epoch
        self.logger = logger
        client = PostgresClient(configuration: context.database.fenced(epoch: epoch),
                                maxConnections: configuration.databaseConnections)
        let repository = JobRepository(client: client, policy: JobRepository.Policy(
            segmentBackoff: configuration.segmentRetryBackoff,
            deadAfterDistinctWorkers: configuration.deadAfterDistinctWorkers))
        self.repository = repository
        let store = CoordinatorStore(repository: repository, leaseDuration: configuration.sessions.leaseDuration,
                                     spool: context.spool)
        let outbox = Outbox()
        self.outbox = outbox
        let plannerWake = WakeSignal()
        self.plannerWake = plannerWake
        let stitcherWake = WakeSignal()
        let shell = CoordinatorShell(
            policy: configuration.sessions, store: store, outbox: outbox, spool: context.cleaner,
            stitcherWake: stitcherWake, logger: logger, transferPort: context.transferPort, media: context.media,
            epoch: epoch, metrics: context.metrics, mayDispatch: { lease.isValid(at: .now) })
        self.shell = shell
        // Planned for the slots the cluster has now (at least two: workers come and go, and a job
        // cut for one lane would keep a second one idle for good).
        let planner = JobPlanner(
            repository: repository, media: context.media, logger: logger,
            defaultVerify: configuration.defaultVerify,
            lanes: { max(2, await shell.sessions.filter { $0.active && !$0.silent }.reduce(0) { $0 + $1.slots }) },
            planned: { await shell.workAvailable() })
        let stitcher = JobStitcher(repository: repository, store: store, cleaner: context.cleaner, media: context.media,
                                   metrics: context.metrics, logger: logger)
        let reaper = LeaseReaper(store: store, shell: shell, orphanGrace: configuration.sessions.orphanGrace,
                                 startedAt: .now, logger: logger)
        let janitor = SpoolJanitor(store: store, cleaner: context.cleaner, logger: logger)
        let pruner = JobPruner(repository: repository, cleaner: context.cleaner, metrics: context.metrics,
                               logger: logger)
        self.pruner = pruner
        submissions = JobSubmissions(
            repository: repository, maxAttempts: configuration.maxAttempts, plannerWake: plannerWake,
            sourceProtocols: context.sourceProtocols, inputRoots: context.inputRoots, outputRoots: context.outputRoots,
            defaultWebhookURL: configuration.webhookURL, hasDefaultSecret: configuration.webhookSecret != nil,
            logger: logger)
        // The webhook outbox is delivered by the active term alone, and only while its lease is
        // valid (a coordinator woken from a pause past its lease sends nothing before it stands
        // down). Its writes (claims, attempts) are not fenced: see docs/coordinator.md, The fence.
        let webhooks = WebhookSender(
            repository: repository,
            settings: WebhookSender.Settings(
                secret: configuration.webhookSecret,
                backoff: Backoff(base: configuration.webhookRetryBase, cap: .seconds(3600), jitter: 0.5),
                userAgent: "splice/" + configuration.version),
            mayAct: { lease.isValid(at: .now) }, metrics: context.metrics, logger: logger)
        let tick = max(.milliseconds(20), configuration.sessions.heartbeatInterval / 4)
        let sessions = SessionService(endpoint: context.workerEndpoint, shell: shell, outbox: outbox,
                                      drainTimeout: configuration.drainTimeout)
        sessionsStopped = sessions.stopped
        // Graceful shutdown stops these last to first: the loops, then the session side drains
        // its commits and says goodbye.
        group = ServiceGroup(services: [
            sessions,
            LoopService("heartbeats", every: tick) { await shell.tick() },
            LoopService("dispatch-poll", every: configuration.pollInterval) { await shell.workAvailable() },
            NotificationService(configuration: context.database, planner: plannerWake, stitcher: stitcherWake,
                                shell: shell),
            LoopService("reaper", every: configuration.reapInterval) { await reaper.round() },
            LoopService("janitor", every: configuration.janitorInterval) { await janitor.round() },
            LoopService("stitcher", every: configuration.pollInterval, wake: stitcherWake) { await stitcher.round() },
            LoopService("planner", every: configuration.pollInterval, wake: plannerWake) { await planner.round() },
            LoopService("webhooks", every: .seconds(1)) { await webhooks.round() },
        ] + (configuration.retention.map { retention in
            [LoopService("retention", every: configuration.retentionInterval) {
                await pruner.round(finishedBefore: retention)
            }]
        } ?? []))
    }

    /// Records the change of leader in the audit log of every unfinished job, then starts the
    /// term's services. Throws when the database refuses (the term never served).
    func start(previousEpoch: Int64, previousHolder: String?, name: String) async throws {
        let detail = "epoch \(epoch): \(name) is the active coordinator"
            + (previousEpoch > 0 ? " (after epoch \(previousEpoch)\(previousHolder.map { ": " + $0 } ?? ""))" : "")
        try await repository.recordCoordinatorChange(detail: detail)
        let group = self.group
        let task = Task { [self] in
            do throws(ServiceGroupError) {
                try await group.run()
            } catch {
                // A term ended from outside (shutdown, abandoned, deposed) stops its services; only
                // one that ends on its own is a failure to report.
                let endedFromOutside = outcome.withLock { state -> Bool in
                    state.failure = error
                    return state.ended
                }
                if !endedFromOutside {
                    logger.error("service failed; stopped", ["service": error.service, "reason": "\(error.reason)"])
                }
            }
            let endedOnItsOwn = outcome.withLock { state -> Bool in
                defer { state.ended = true }
                return !state.ended
            }
            if endedOnItsOwn { failed.open() }
        }
        running.withLock { $0 = task }
    }

    /// The services' failure, when one failed and ended the term on its own.
    var failure: ServiceGroupError? { outcome.withLock { $0.failure } }

    /// Graceful end (the process is shutting down): no more claims, the writes in flight are
    /// answered (for up to the drain timeout), every worker is told, the loops stop.
    func endGracefully() async {
        outcome.withLock { $0.ended = true }
        await group.shutdown()
        let task = running.withLock { $0 }
        await task?.value
        await client.close()
    }

    /// Abandons the term (the coordinator's task was cancelled: an abrupt stop): its services are
    /// cancelled, nothing is drained and nothing said to the workers — what kill -9 would leave.
    func abandon() async {
        outcome.withLock { $0.ended = true }
        let task = running.withLock { $0 }
        task?.cancel()
        if let task { _ = await SpliceConcurrency.value(of: task, within: .seconds(2)) }
        await client.close()
    }

    /// Stands down: every session is told STANDBY (what is known of the active coordinator) or,
    /// if it is older, DISCONNECT; nothing more is sent or written; the store work in flight is
    /// cancelled and the loops stopped without waiting for calls a silent database holds. Returns
    /// who was told, for the standby desk to remember.
    func standDown(leader: LeaderLease.Record?) async -> [StandbyPeer] {
        outcome.withLock { $0.ended = true }
        let active = leader?.active
        let peers = await shell.standDown(epoch: active?.epoch, active: active?.workersEndpoint)
        outbox.finish()
        // The farewells go out (a second at most), then everything stops.
        _ = await withDeadline(.seconds(1)) { () async -> Bool? in
            await self.sessionsStopped.wait()
            return true
        }
        let task = running.withLock { $0 }
        task?.cancel()
        if let task { _ = await SpliceConcurrency.value(of: task, within: .seconds(2)) }
        await client.close()
        return peers
    }
}

/// The active coordinator's own view of its lease: valid until the last successful renewal's
/// sending time plus the lease, less a margin — measured on this process's monotonic clock, never
/// compared with the database's. Claims stop when it says so.
final class LeaseClock: Sendable {
    private let validUntil = Mutex<(until: ContinuousClock.Instant?, sent: ContinuousClock.Instant?)>((nil, nil))
    let margin: Duration

    init(margin: Duration) {
        self.margin = margin
    }

    /// A renewal (or the acquisition) sent at `sent` succeeded: the lease runs until at least
    /// `sent + lease` on the database.
    func renewed(sentAt sent: ContinuousClock.Instant, lease: Duration) {
        validUntil.withLock { current in
            let until = sent + lease - margin
            current.until = max(current.until ?? until, until)
            current.sent = max(current.sent ?? sent, sent)
        }
    }

    /// The lease is gone (stood down, released).
    func lapse() {
        validUntil.withLock { $0 = (nil, nil) }
    }

    /// When this coordinator must stand down at the latest; nil when it holds no lease.
    var deadline: ContinuousClock.Instant? { validUntil.withLock { $0.until } }

    /// When the last renewal that succeeded (or the acquisition) was sent.
    var lastRenewal: ContinuousClock.Instant? { validUntil.withLock { $0.sent } }

    func isValid(at now: ContinuousClock.Instant) -> Bool {
        validUntil.withLock { $0.until.map { now < $0 } ?? false }
    }
}
