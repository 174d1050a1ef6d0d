import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceHTTP
import SpliceLog
import SpliceStore
import SpliceWire
import SpliceDaemon

/// A started coordinator process: the database, the ZeroMQ context with its ZAP handler, the
/// endpoints bound, and the services that run on them — the worker reader, the client API and the
/// leadership, which makes this coordinator the active one (a ``CoordinatorTerm`` under the epoch
/// it holds) or a standby (docs/coordinator.md, Standby coordinators). `start` sets everything up
/// (undoing what it did when a step fails); `run` runs the services until `shutdown` drains them or
/// the task is cancelled (an abrupt stop, as close to kill -9 as a process can do to itself); then
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
    /// Active (and its term) or standby.
    let role: CoordinatorRole
    /// The operators' figures, for the whole process (every term counts into them).
    let metrics: CoordinatorMetrics
    /// The operators' read-only view of the database (its own small pool).
    let operations: OperationsStore
    /// The HTTP API's event streams, when it runs.
    let events: JobEventHub?
    /// This coordinator as the others see it in the leadership row.
    let candidate: LeaderLease.Candidate
    let startedAt = ContinuousClock.now
    private let leadership: LeadershipService
    private let group: ServiceGroup
    private let resources: Teardown<Ending>
    private let logger: Logger

    private init(
        endpoints: CoordinatorEndpoints, workerEndpoint: CoordinatorWorkerEndpoint, apiEndpoint: APIServerEndpoint,
        role: CoordinatorRole, metrics: CoordinatorMetrics, operations: OperationsStore, events: JobEventHub?,
        candidate: LeaderLease.Candidate, leadership: LeadershipService, group: ServiceGroup, resources: Teardown<Ending>,
        logger: Logger
    ) {
        self.endpoints = endpoints
        self.workerEndpoint = workerEndpoint
        self.apiEndpoint = apiEndpoint
        self.role = role
        self.metrics = metrics
        self.operations = operations
        self.events = events
        self.candidate = candidate
        self.leadership = leadership
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
        // Reads only (a standby's answers, the ZAP handler's lookups): no epoch, read-only sessions.
        let reads = JobRepository(client: PostgresClient(
            configuration: database.readOnly(applicationName: "splice-reads"), maxConnections: 4))
        resources.add { _ in await reads.client.close() }
        try createSpool(configuration.spool)

        let context = try WireContext()
        resources.add { _ in await context.terminate() }
        let security = try await startSecurity(configuration, context: context, repository: reads, resources: resources)
        // A worker whose key is not enrolled yet may present a join token, and nothing else.
        var workerOptions = WireOptions.router(curve: security.curve(domain: workerDomain))
        workerOptions.probationTypes = WorkerMessage.probationTypes
        let workerEndpoint = CoordinatorWorkerEndpoint(try await WireEndpoint.bind(
            [configuration.workersEndpoint], type: .router, context: context, options: workerOptions))
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
        let metrics = CoordinatorMetrics()
        let inputRoots = try PathRoots(configuration.inputRoots, flag: "--input-root")
        let outputRoots = try PathRoots(configuration.outputRoots, flag: "--output-root")
        let termContext = TermContext(
            configuration: configuration, database: database, workerEndpoint: workerEndpoint,
            transferPort: transferPort, metrics: metrics, media: MediaTaskRunner(isolation: configuration.mediaTasks),
            spool: spool, cleaner: SpoolCleaner(layout: spool, logger: logger), enrolledKeys: security.workerKeys,
            sourceProtocols: try SourceProtocols(configuration.sourceProtocols), inputRoots: inputRoots,
            outputRoots: outputRoots, logger: logger)
        let operations = OperationsStore(database: database)
        resources.add { _ in await operations.close() }
        let role = CoordinatorRole(desk: StandbyDesk(endpoint: workerEndpoint, logger: logger))
        // The HTTP API's reads have a pool of their own (read-only, statements cut off after 5 s),
        // so its load never takes a connection the dispatch needs; a standby answers from it too.
        let httpReads = JobRepository(client: PostgresClient(
            configuration: database.forOperations(statementTimeout: .seconds(5)),
            maxConnections: configuration.httpDatabaseConnections, retryPolicy: .never))
        resources.add { _ in await httpReads.client.close() }
        let tokens = TokenAuthority(repository: httpReads)
        let handler = ClientAPIHandler(
            role: role, reads: reads, workerEndpoint: workerEndpoint, enrolledKeys: security.workerKeys,
            name: configuration.name, inputRoots: inputRoots, outputRoots: outputRoots,
            tokenRevoked: { tokens.forget($0) }, logger: logger)
        let ownKey = configuration.keys?.publicKey
        let scopes = configuration.adminKeyScopes
        let apiScopes: @Sendable (WirePeer) -> Set<APIScope> = { peer in
            guard let key = peer.publicKey, key != ownKey, let limited = scopes[key] else { return Set(APIScope.allCases) }
            return limited
        }
        var http: (service: HTTPAPIService, events: JobEventHub)?
        if let address = configuration.httpEndpoint {
            let events = JobEventHub(reads: httpReads, role: role, pollInterval: configuration.eventPollInterval,
                                     logger: logger)
            let api = HTTPAPIHandler(
                role: role, name: configuration.name, reads: httpReads, api: handler, tokens: tokens,
                limiter: RateLimiter(defaultRate: configuration.httpRateLimit), events: events, metrics: metrics,
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
        let endpoints = CoordinatorEndpoints(
            workers: workerEndpoint.wire.endpoints.first ?? configuration.workersEndpoint,
            api: apiEndpoint.wire.endpoints.first ?? configuration.apiEndpoint, data: dataBound,
            serverKey: configuration.keys?.publicKey, http: http?.service.server.address)
        let candidate = LeaderLease.Candidate(
            name: configuration.name,
            apiEndpoint: advertised(endpoints.api, host: configuration.advertisedHost),
            workersEndpoint: advertised(endpoints.workers, host: configuration.advertisedHost),
            metricsEndpoint: configuration.metricsEndpoint.map { advertised(http: $0.description,
                                                                          host: configuration.advertisedHost) },
            httpEndpoint: endpoints.http.map { advertised(http: $0.description, host: configuration.advertisedHost) })
        var embedded = false
        if case .embedded = configuration.database { embedded = true }
        let leadership = LeadershipService(context: termContext, candidate: candidate, embedded: embedded, role: role)

        // Graceful shutdown stops these last to first: the APIs, the reader, then the leadership
        // ends the active term (its commits drained, the workers told) and gives the lease up.
        let group = ServiceGroup(services: [
            leadership,
            WorkerReader(endpoint: workerEndpoint, role: role, metrics: metrics,
                         joins: JoinDesk(endpoint: workerEndpoint, role: role, enrolledKeys: security.workerKeys,
                                         logger: logger)),
            APIService(endpoint: apiEndpoint, handler: handler, scopes: apiScopes, logger: logger),
        ] + (http.map { [$0.service] } ?? []))
        return CoordinatorRuntime(
            endpoints: endpoints, workerEndpoint: workerEndpoint, apiEndpoint: apiEndpoint, role: role,
            metrics: metrics, operations: operations, events: http?.events, candidate: candidate,
            leadership: leadership, group: group, resources: resources, logger: logger)
    }

    /// `endpoint` as others reach it: a wildcard host (`*`, `0.0.0.0`, `[::]`) becomes `host` (the
    /// host name when nil); anything else is kept.
    static func advertised(_ endpoint: String, host: String?) -> String {
        let scheme = "tcp://"
        guard endpoint.hasPrefix(scheme), let colon = endpoint.lastIndex(of: ":") else { return endpoint }
        let bound = endpoint[endpoint.index(endpoint.startIndex, offsetBy: scheme.count)..<colon]
        guard ["*", "0.0.0.0", "[::]", "::"].contains(String(bound)) else { return endpoint }
        return scheme + (host ?? ProcessInfo.processInfo.hostName) + endpoint[colon...]
    }

    /// The operators' endpoint as others reach it: `http://HOST:PORT/`.
    static func advertised(http address: String, host: String?) -> String {
        let endpoint = advertised("tcp://" + address, host: host)
        return "http://" + endpoint.dropFirst("tcp://".count) + "/"
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
                if decision == .probation {
                    logger.info("handshake admitted on probation: the key may present a join token, nothing else",
                                ["key": request.publicKey.z85, "address": request.address])
                }
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
        var failure: ServiceGroupError?
        let group = self.group
        let running = Task { () -> ServiceGroupError? in
            do throws(ServiceGroupError) {
                try await group.run()
                return nil
            } catch {
                return error
            }
        }
        // "coordinator ready" once the endpoints are bound and the leadership has made its first
        // decision: a coordinator alone on its database is active by then.
        await withTaskCancellationHandler {
            await leadership.decided.wait()
        } onCancel: {
            running.cancel()
        }
        logger.info("coordinator ready", ["workers": endpoints.workers, "api": endpoints.api,
                                          "data": endpoints.data ?? "-", "http": endpoints.http?.description ?? "-",
                                          "name": candidate.name,
                                          "role": role.term == nil ? "standby" : "active", "epoch": role.epoch])
        failure = await withTaskCancellationHandler {
            await running.value
        } onCancel: {
            running.cancel()
        }
        await resources.run(Task.isCancelled ? .abrupt : .graceful)
        if let failure { throw failure }
    }

    /// Waits until the leadership has made its first decision (active, or standing by).
    func decided() async {
        await leadership.decided.wait()
    }

    /// Graceful shutdown: stop accepting, let commits in flight finish and be acknowledged, say
    /// goodbye to the workers, give the lease up; `run` then closes the endpoints with linger.
    func shutdown() async {
        logger.info("coordinator stopping")
        await group.shutdown()
    }
}
