import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceHTTP
import SpliceLog
import SpliceStore
import SpliceWire
import SpliceDaemon

/// A started coordinator: the database, the ZeroMQ context with its ZAP handler, both endpoints
/// bound, and the services that run on them. `start` sets everything up (undoing what it did
/// when a step fails); `run` runs the services until `shutdown` drains them or the task is
/// cancelled (an abrupt stop, as close to kill -9 as a process can do to itself); then
/// everything is closed.
final class CoordinatorRuntime: Sendable {
    /// ZAP domains of the two endpoints.
    static let workerDomain = "splice"
    static let apiDomain = "splice-api"

    /// How the coordinator is ending, for the steps of its ``Teardown``.
    enum Ending: Sendable, Hashable {
        /// A graceful shutdown (asked for, or after a service failed and the group stopped the
        /// others): drain, linger, stop what was started.
        case graceful
        /// Cancellation (as close to a crash as a process gets): close without linger and leave
        /// what a restart reuses (the embedded PostgreSQL).
        case abrupt
        /// Starting failed part-way: close without linger and stop everything that was started,
        /// so a failed start leaves nothing running.
        case startFailed

        var lingers: Bool { self == .graceful }
    }

    let endpoints: CoordinatorEndpoints
    let workerEndpoint: CoordinatorWorkerEndpoint
    let apiEndpoint: APIServerEndpoint
    let shell: CoordinatorShell
    /// The operators' read-only view of the database (its own small pool).
    let operations: OperationsStore
    /// The HTTP API's event streams, when it runs.
    let events: JobEventHub?
    let startedAt = ContinuousClock.now
    private let group: ServiceGroup
    private let resources: Teardown<Ending>
    private let logger: Logger

    private init(
        endpoints: CoordinatorEndpoints, workerEndpoint: CoordinatorWorkerEndpoint, apiEndpoint: APIServerEndpoint,
        shell: CoordinatorShell, operations: OperationsStore, events: JobEventHub?, group: ServiceGroup,
        resources: Teardown<Ending>, logger: Logger
    ) {
        self.endpoints = endpoints
        self.workerEndpoint = workerEndpoint
        self.apiEndpoint = apiEndpoint
        self.shell = shell
        self.operations = operations
        self.events = events
        self.group = group
        self.resources = resources
        self.logger = logger
    }

    // MARK: - Starting

    static func start(_ configuration: CoordinatorConfiguration) async throws -> CoordinatorRuntime {
        try configuration.validate()
        let resources = Teardown<Ending>()
        do {
            return try await start(configuration, resources: resources)
        } catch {
            await resources.run(.startFailed)
            throw error
        }
    }

    private static func start(_ configuration: CoordinatorConfiguration, resources: Teardown<Ending>) async throws
        -> CoordinatorRuntime
    {
        let logger = configuration.logger
        let database = try await openDatabase(configuration, resources: resources)
        let client = PostgresClient(configuration: database, maxConnections: configuration.databaseConnections)
        resources.add { _ in await client.close() }
        let repository = JobRepository(client: client, policy: JobRepository.Policy(
            segmentBackoff: configuration.segmentRetryBackoff,
            deadAfterDistinctWorkers: configuration.deadAfterDistinctWorkers))
        try createSpool(configuration.spool)

        let context = try WireContext()
        resources.add { _ in await context.terminate() }
        let security = try await startSecurity(configuration, context: context, repository: repository, resources: resources)
        let workerEndpoint = CoordinatorWorkerEndpoint(try await WireEndpoint.bind(
            [configuration.workersEndpoint], type: .router, context: context,
            options: .router(curve: security.curve(domain: workerDomain))))
        resources.add { ending in await workerEndpoint.close(linger: ending.lingers ? nil : .zero) }
        let apiEndpoint = APIServerEndpoint(try await WireEndpoint.bind(
            [configuration.apiEndpoint], type: .router, context: context,
            options: .router(curve: security.curve(domain: apiDomain))))
        resources.add { ending in await apiEndpoint.close(linger: ending.lingers ? nil : .zero) }
        // Transfer mode's bulk data, on its own ROUTER so heartbeats and ASSIGNs never queue
        // behind megabytes; the same ZAP domain as the worker endpoint (enrolled worker keys).
        var transferPort: TransferPort?
        var dataBound: String?
        if let address = configuration.dataEndpoint {
            let data = DataEndpoint(try await WireEndpoint.bind(
                [address], type: .router, context: context, options: .router(curve: security.curve(domain: workerDomain))))
            let port = TransferPort(endpoint: data, logger: logger)
            let pump = Task.detached { await port.run() }
            resources.add { _ in
                pump.cancel()
                await data.close(linger: .zero)
            }
            transferPort = port
            dataBound = data.wire.endpoints.first ?? address
        }

        let spool = SpoolLayout(root: configuration.spool)
        let store = CoordinatorStore(repository: repository, leaseDuration: configuration.sessions.leaseDuration,
                                     spool: spool)
        let cleaner = SpoolCleaner(layout: spool, logger: logger)
        let outbox = Outbox()
        let plannerWake = WakeSignal()
        let stitcherWake = WakeSignal()
        let media = MediaTaskRunner(isolation: configuration.mediaTasks)
        let shell = CoordinatorShell(
            policy: configuration.sessions, store: store, outbox: outbox, spool: cleaner, stitcherWake: stitcherWake,
            logger: logger, transferPort: transferPort, media: media)
        // Planned for the slots the cluster has now (at least two: workers come and go, and a job
        // cut for one lane would keep a second one idle for good).
        let planner = JobPlanner(
            repository: repository, media: media, logger: logger, defaultVerify: configuration.defaultVerify,
            lanes: { max(2, await shell.sessions.filter { $0.active && !$0.silent }.reduce(0) { $0 + $1.slots }) },
            planned: { await shell.workAvailable() })
        let stitcher = JobStitcher(repository: repository, store: store, cleaner: cleaner, media: media,
                                   metrics: shell.metrics, logger: logger)
        let operations = OperationsStore(database: database)
        resources.add { _ in await operations.close() }
        let reaper = LeaseReaper(store: store, shell: shell, orphanGrace: configuration.sessions.orphanGrace,
                                 startedAt: .now, logger: logger)
        let janitor = SpoolJanitor(store: store, cleaner: cleaner, logger: logger)
        let inputRoots = try PathRoots(configuration.inputRoots, flag: "--input-root")
        let outputRoots = try PathRoots(configuration.outputRoots, flag: "--output-root")
        let submissions = JobSubmissions(
            repository: repository, maxAttempts: configuration.maxAttempts, plannerWake: plannerWake,
            sourceProtocols: try SourceProtocols(configuration.sourceProtocols), inputRoots: inputRoots,
            outputRoots: outputRoots, defaultWebhookURL: configuration.webhookURL,
            hasDefaultSecret: configuration.webhookSecret != nil, logger: logger)
        // The HTTP API's reads have a pool of their own (statements cut off after 5 s), so its load
        // never takes a connection the dispatch needs.
        let reads = JobRepository(client: PostgresClient(
            configuration: database.forOperations(statementTimeout: .seconds(5)),
            maxConnections: configuration.httpDatabaseConnections, retryPolicy: .never))
        resources.add { _ in await reads.client.close() }
        let tokens = TokenAuthority(repository: reads)
        let handler = ClientAPIHandler(
            repository: repository, shell: shell, workerEndpoint: workerEndpoint, enrolledKeys: security.workerKeys,
            submissions: submissions, inputRoots: inputRoots, outputRoots: outputRoots,
            tokenRevoked: { tokens.forget($0) }, logger: logger)
        let ownKey = configuration.keys?.publicKey
        let scopes = configuration.adminKeyScopes
        let apiScopes: @Sendable (WirePeer) -> Set<APIScope> = { peer in
            guard let key = peer.publicKey, key != ownKey, let limited = scopes[key] else { return Set(APIScope.allCases) }
            return limited
        }
        var http: (service: HTTPAPIService, events: JobEventHub)?
        if let address = configuration.httpEndpoint {
            let events = JobEventHub(reads: reads, shell: shell, pollInterval: configuration.eventPollInterval,
                                     logger: logger)
            let api = HTTPAPIHandler(
                submissions: submissions, reads: reads, api: handler, shell: shell, tokens: tokens,
                limiter: RateLimiter(defaultRate: configuration.httpRateLimit), events: events, metrics: shell.metrics,
                logger: logger)
            let server: HTTPServer
            do {
                server = try HTTPServer.start(
                    on: address, limits: HTTPAPIService.limits(maxConnections: configuration.httpMaxConnections),
                    refusal: Problem.refusal) { request in await api.respond(to: request) }
            } catch {
                throw CoordinatorError(.invalidConfiguration, "the HTTP API (--http-endpoint) cannot start: \(error)")
            }
            resources.add { _ in await server.close() }
            logger.info("http api ready", ["address": server.address.description,
                                           "openapi": server.address.url + "/v1/openapi.json"])
            if !address.isLoopback {
                logger.warning("http api reachable beyond this machine without TLS; put nginx in front (docs/api.md)",
                               ["address": server.address.description])
            }
            http = (HTTPAPIService(server: server, events: events), events)
        }
        let webhooks = WebhookSender(
            repository: repository,
            settings: WebhookSender.Settings(
                secret: configuration.webhookSecret,
                backoff: Backoff(base: configuration.webhookRetryBase, cap: .seconds(3600), jitter: 0.5),
                userAgent: "splice/" + configuration.version),
            gate: configuration.webhookLeadership, metrics: shell.metrics, logger: logger)
        let tick = max(.milliseconds(20), configuration.sessions.heartbeatInterval / 4)

        // Graceful shutdown stops these last to first: the API, the loops, the reader, then the
        // session side drains its commits and says goodbye.
        let group = ServiceGroup(services: [
            SessionService(endpoint: workerEndpoint, shell: shell, outbox: outbox,
                           drainTimeout: configuration.drainTimeout),
            WorkerReader(endpoint: workerEndpoint, shell: shell),
            LoopService("heartbeats", every: tick) { await shell.tick() },
            LoopService("dispatch-poll", every: configuration.pollInterval) { await shell.workAvailable() },
            NotificationService(configuration: database, planner: plannerWake, stitcher: stitcherWake, shell: shell),
            LoopService("reaper", every: configuration.reapInterval) { await reaper.round() },
            LoopService("janitor", every: configuration.janitorInterval) { await janitor.round() },
            LoopService("stitcher", every: configuration.pollInterval, wake: stitcherWake) { await stitcher.round() },
            LoopService("planner", every: configuration.pollInterval, wake: plannerWake) { await planner.round() },
            LoopService("webhooks", every: .seconds(1)) { await webhooks.round() },
            APIService(endpoint: apiEndpoint, handler: handler, scopes: apiScopes, logger: logger),
        ] + (http.map { [$0.service] } ?? []))
        let endpoints = CoordinatorEndpoints(
            workers: workerEndpoint.wire.endpoints.first ?? configuration.workersEndpoint,
            api: apiEndpoint.wire.endpoints.first ?? configuration.apiEndpoint, data: dataBound,
            serverKey: configuration.keys?.publicKey, http: http?.service.server.address)
        return CoordinatorRuntime(
            endpoints: endpoints, workerEndpoint: workerEndpoint, apiEndpoint: apiEndpoint, shell: shell,
            operations: operations, events: http?.events, group: group, resources: resources, logger: logger)
    }

    /// The store: the given server, or the embedded one in its directory; migrated either way.
    private static func openDatabase(
        _ configuration: CoordinatorConfiguration, resources: Teardown<Ending>
    ) async throws -> ConnectionConfiguration {
        let logger = configuration.logger
        let database: ConnectionConfiguration
        switch configuration.database {
        case .server(let server):
            database = server
        case .embedded(let directory):
            // The server may run as another account (PostgreSQL refuses root): the folder holding
            // its directory must be searchable by it, so a state directory we create is 0755.
            try? FileManager.default.createDirectory(
                atPath: (directory as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o755])
            var settings = EmbeddedPostgres.Configuration(directory: directory)
            settings.log = { line in logger.info("embedded postgres", ["detail": line]) }
            let server = EmbeddedPostgres(settings)
            try await server.start()
            // Stopped on graceful shutdown and when starting fails (nothing is left running);
            // after a crash (or cancellation) the next start reuses it.
            resources.add { ending in if ending != .abrupt { try? await server.stop() } }
            database = try await server.createDatabase("splice")
        }
        let applied = try await Migrator(configuration: database).migrate()
        for migration in applied {
            logger.info("migration applied", ["version": migration.version, "name": migration.name])
        }
        return database
    }

    private static func createSpool(_ spool: URL) throws {
        do {
            try FileManager.default.createDirectory(
                at: spool.appendingPathComponent("jobs"), withIntermediateDirectories: true)
        } catch {
            throw CoordinatorError(
                .invalidConfiguration,
                "cannot create the spool directory \(spool.path): \(error.localizedDescription); "
                    + "give --spool a writable directory shared with the workers")
        }
    }

    /// CURVE on both endpoints when the coordinator has keys: a ZAP handler admitting enrolled,
    /// unrevoked worker keys on the worker endpoint and the admin keys on the API endpoint.
    private static func startSecurity(
        _ configuration: CoordinatorConfiguration, context: WireContext, repository: JobRepository,
        resources: Teardown<Ending>
    ) async throws -> Security {
        guard let keys = configuration.keys else { return Security(keys: nil, workerKeys: nil) }
        let logger = configuration.logger
        let enrolled = EnrolledKeys(try await repository.workers().compactMap { worker -> CurvePublicKey? in
            worker.state == .revoked ? nil : try? CurvePublicKey(z85: worker.publicKey)
        })
        let zap = try await ZAPHandler.start(
            context: context,
            authorizers: [
                workerDomain: WorkerKeyAuthorizer(enrolled: enrolled, repository: repository),
                apiDomain: EnrolledKeys(configuration.adminKeys + [keys.publicKey]),
            ],
            observer: { request, decision in
                guard case .deny(let reason) = decision else { return }
                logger.warning("handshake refused", ["endpoint": request.domain == apiDomain ? "api" : "workers",
                                                     "key": request.publicKey.z85, "address": request.address,
                                                     "reason": reason])
            })
        resources.add { _ in await zap.close() }
        return Security(keys: keys, workerKeys: enrolled)
    }

    struct Security {
        var keys: CurveKeyPair?
        var workerKeys: EnrolledKeys?

        func curve(domain: String) -> CurveRole {
            keys.map { .server(keys: $0, domain: domain) } ?? .none
        }
    }

    // MARK: - Running

    /// Runs the services; returns after a graceful shutdown, or throws the ``ServiceGroupError``
    /// of a service that failed (the group has then stopped the others gracefully). Everything is
    /// closed before it returns, with linger unless the task was cancelled.
    func run() async throws {
        logger.info("coordinator ready", ["workers": endpoints.workers, "api": endpoints.api,
                                          "data": endpoints.data ?? "-", "http": endpoints.http?.description ?? "-"])
        var failure: ServiceGroupError?
        do {
            try await group.run()
        } catch {
            failure = error
        }
        await resources.run(Task.isCancelled ? .abrupt : .graceful)
        if let failure { throw failure }
    }

    /// Graceful shutdown: stop accepting, let commits in flight finish and be acknowledged, say
    /// goodbye to the workers; `run` then closes the endpoints with linger.
    func shutdown() async {
        logger.info("coordinator stopping")
        await group.shutdown()
    }
}
