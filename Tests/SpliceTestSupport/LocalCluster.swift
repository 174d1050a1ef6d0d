public import Foundation
public import SpliceStore
import SpliceCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One `splice coordinator` (or several on one database: one active, the others standing by) and
/// its `splice worker`s as child processes on a private database and spool, with ZeroMQ over
/// tcp://127.0.0.1 — the whole cluster as operators run it. Tests kill, stop and restart its
/// processes; the store tells what was committed.
///
///     var cluster = try await LocalCluster.start(workers: 3)            // lease 30 s
///     let submit = try SpliceProcess(["submit", input, output, "--wait", "--coordinator", cluster.coordinator.api])
///     cluster.coordinator.signal(SIGKILL); try await cluster.restartCoordinator()
///     try await cluster.stop()
///
/// Every process is killed when the test lets go of the cluster (a failed expectation included)
/// or, failing that, when the test process exits.
public struct LocalCluster: Sendable {
    public let database: ConnectionConfiguration
    public let spool: URL
    /// A folder for the jobs' outputs.
    public let outputs: URL
    /// The coordinator's flags beyond database, spool and endpoints (`--lease-seconds 4`), given
    /// again on every restart.
    public let coordinatorFlags: [String]
    /// Variables the coordinators get beyond PATH and HOME (object storage's `AWS_*`), again on every restart.
    public let coordinatorEnvironment: [String: String]
    /// The coordinators, `c0`, `c1`… (`--name`); one unless the test asked for standbys. Which one
    /// is active is the store's to say (``activeCoordinator()``).
    public private(set) var coordinators: [ChildCoordinator]
    /// The first coordinator (the only one without standbys).
    public var coordinator: ChildCoordinator { coordinators[0] }
    /// Every coordinator's worker endpoint, as `--coordinator` takes them (`tcp://a,tcp://b`).
    public var workerEndpoints: String { coordinators.map(\.workers).joined(separator: ",") }
    /// Every coordinator's API endpoint, as the client commands' `--coordinator` takes them.
    public var apiEndpoints: String { coordinators.map(\.api).joined(separator: ",") }
    public private(set) var workers: [ChildWorker]
    /// Coordinators and workers the test replaced after killing them: their logs, and the store
    /// ids of the workers.
    public private(set) var retiredCoordinators: [ChildCoordinator] = []
    public private(set) var retiredWorkers: [ChildWorker] = []
    /// Reads the store (one connection).
    public let repository: JobRepository

    /// Starts a coordinator on `database` (a fresh migrated one on the shared test server when nil)
    /// and `spool` (a fresh folder when nil), and `workers` workers named `w0`, `w1`…, and waits
    /// until every worker has registered. `leaseSeconds` nil keeps the coordinator's default lease.
    /// With `standbys`, that many more coordinators on the same database (named `c1`, `c2`…; the
    /// first, `c0`, is started first and so is the active one), and the workers know them all.
    public static func start(
        workers count: Int, leaseSeconds: Int? = 30, database: ConnectionConfiguration? = nil, spool: URL? = nil,
        coordinatorFlags: [String] = [], coordinatorEnvironment: [String: String] = [:], standbys: Int = 0
    ) async throws -> LocalCluster {
        let database = if let database { database } else { try await TestPostgres.makeDatabase() }
        let spool = spool ?? Fixtures.temporaryDirectory("cluster-spool")
        let flags = (leaseSeconds.map { ["--lease-seconds", String($0)] } ?? []) + coordinatorFlags
        var coordinators: [ChildCoordinator] = []
        for index in 0...standbys {
            let named = standbys > 0 ? ["--name", "c\(index)"] : []
            coordinators.append(try await ChildCoordinator.start(database: database, spool: spool, extra: flags + named,
                                                                 environment: coordinatorEnvironment))
        }
        let endpoints = coordinators.map(\.workers).joined(separator: ",")
        let workers = try (0..<count).map { index in
            try ChildWorker(coordinator: endpoints, spool: spool, name: "w\(index)")
        }
        let cluster = LocalCluster(
            database: database, spool: spool, outputs: Fixtures.temporaryDirectory("cluster-out"),
            coordinatorFlags: flags, coordinatorEnvironment: coordinatorEnvironment, coordinators: coordinators,
            workers: workers,
            repository: JobRepository(client: PostgresClient(configuration: database, maxConnections: 1)))
        guard await eventually(within: .seconds(60), { workers.allSatisfy(\.isRegistered) }) else {
            throw TestFailure("the workers did not register\n\(cluster.logs)")
        }
        return cluster
    }

    private init(
        database: ConnectionConfiguration, spool: URL, outputs: URL, coordinatorFlags: [String],
        coordinatorEnvironment: [String: String],
        coordinators: [ChildCoordinator], workers: [ChildWorker], repository: JobRepository
    ) {
        self.database = database
        self.spool = spool
        self.outputs = outputs
        self.coordinatorFlags = coordinatorFlags
        self.coordinatorEnvironment = coordinatorEnvironment
        self.coordinators = coordinators
        self.workers = workers
        self.repository = repository
    }

    /// `name` in ``outputs``.
    public func outputPath(_ name: String) -> String { outputs.appendingPathComponent(name).path }

    // MARK: - Replacing processes

    /// A coordinator on the same database, spool and endpoints (and name), after the one at
    /// `index` died; with standbys it starts as one.
    public mutating func restartCoordinator(at index: Int = 0) async throws {
        let dead = coordinators[index]
        let named = coordinators.count > 1 ? ["--name", "c\(index)"] : []
        let next = try await ChildCoordinator.start(
            database: database, spool: spool, workers: dead.workers, api: dead.api,
            data: dead.data ?? loopback, extra: coordinatorFlags + named, environment: coordinatorEnvironment)
        retiredCoordinators.append(dead)
        coordinators[index] = next
    }

    /// The coordinator whose lease is live now, by the store's leadership row, and its epoch;
    /// nil while none holds a live lease (or it is not one of these).
    public func activeCoordinator() async throws -> (index: Int, epoch: Int64)? {
        guard let active = try await LeaderLease.current(client: repository.client).active else { return nil }
        if coordinators.count == 1 { return (0, active.epoch) }
        guard let index = coordinators.indices.first(where: { active.holderName == "c\($0)" }) else { return nil }
        return (index, active.epoch)
    }

    /// Starts a new worker in place of `workers[index]` (which the test killed), under a name of
    /// its own (`w1-2`: the second replacement so far), and returns it. It registers on its own.
    @discardableResult
    public mutating func replaceWorker(at index: Int) throws -> ChildWorker {
        let next = try ChildWorker(coordinator: workerEndpoints, spool: spool,
                                   name: "w\(index)-\(retiredWorkers.count + 1)")
        retiredWorkers.append(workers[index])
        workers[index] = next
        return next
    }

    /// Starts a transfer-mode worker (``ChildWorker/init(coordinator:data:name:isolation:extra:)``)
    /// named `name` and waits until it has registered. `isolated`: in a mount namespace where the
    /// tests' files are hidden, and it starts only if it can see neither the spool, nor the outputs'
    /// folder, nor any of `mustNotSee` (a job's source, say). `data` replaces the coordinator's data
    /// endpoint (a ``FaultProxy`` in front of it, say).
    @discardableResult
    public mutating func addTransferWorker(named name: String, isolated: Bool, mustNotSee: [String] = [],
                                           data: String? = nil, extra: [String] = []) async throws -> ChildWorker
    {
        guard let data = data ?? coordinator.data else { throw TestFailure("the coordinator logged no data endpoint") }
        let isolation = isolated ? MountIsolation.testFiles(mustNotSee: [spool.path, outputs.path] + mustNotSee) : nil
        let worker = try ChildWorker(coordinator: coordinator.workers, data: data, name: name, isolation: isolation,
                                     extra: extra)
        workers.append(worker)
        guard await eventually(within: .seconds(60), { worker.isRegistered || !worker.process.isRunning }),
              worker.isRegistered
        else {
            throw TestFailure("transfer worker \(name) did not register\n\(worker.process.output)")
        }
        return worker
    }

    /// Starts a shared-spool worker named `name` (with `flags`, `wrapper` and `binary` as
    /// ``ChildWorker/init(coordinator:spool:name:flags:wrapper:environment:binary:)`` takes them) and
    /// waits until it has registered.
    @discardableResult
    public mutating func addSpoolWorker(named name: String, flags: [String] = ChildWorker.usualFlags,
                                        wrapper: [String] = [], binary: URL? = nil) async throws -> ChildWorker {
        let worker = try ChildWorker(coordinator: workerEndpoints, spool: spool, name: name, flags: flags,
                                     wrapper: wrapper, binary: binary)
        workers.append(worker)
        guard await eventually(within: .seconds(60), { worker.isRegistered }) else {
            throw TestFailure("worker \(name) did not register\n\(worker.process.output)")
        }
        return worker
    }

    /// The first worker to log that it started a segment (polled every 20 ms).
    public func firstWorkerEncoding(within timeout: Duration = .seconds(120)) async -> ChildWorker? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let worker = workers.first(where: { $0.process.output.contains("segment started") }) {
                return worker
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    // MARK: - The store

    /// The store id of the worker registered under `name` (names are unique within one cluster).
    public func workerID(named name: String) async throws -> UUID? {
        try await repository.workers().first { $0.name == name }?.id
    }

    /// The job's audit log, oldest first.
    public func events(of job: String) async throws -> [JobEvent] {
        try await repository.events(ofJob: try Self.uuid(job))
    }

    /// The job's row.
    public func job(_ job: String) async throws -> Job? {
        try await repository.job(id: try Self.uuid(job))
    }

    /// The job's segments, in order.
    public func segments(of job: String) async throws -> [Segment] {
        try await repository.segments(ofJob: try Self.uuid(job))
    }

    /// For each segment done, the worker (store id) whose result was committed.
    public func segmentsDone(job: String) async throws -> [Int64: UUID] {
        var done: [Int64: UUID] = [:]
        for event in try await events(of: job) where event.kind == "segment_done" {
            if let segment = event.segmentID {
                #expect(done[segment] == nil, "segment \(segment) committed twice")
                done[segment] = event.workerID
            }
        }
        return done
    }

    private static func uuid(_ job: String) throws -> JobID {
        guard let id = JobID(job) else { throw TestFailure("'\(job)' is not a job id") }
        return id
    }

    // MARK: - Files and logs

    /// Regular files left in the spool.
    public func spoolFiles() -> [String] {
        let walker = FileManager.default.enumerator(at: spool, includingPropertiesForKeys: [.isRegularFileKey])
        return (walker?.allObjects as? [URL] ?? []).filter {
            (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
        }.map(\.path)
    }

    /// Everything the coordinators (these last) have logged.
    public var coordinatorLogs: String {
        (retiredCoordinators + coordinators).map(\.output).joined(separator: "\n")
    }

    /// Everything the processes logged, for failure messages.
    public var logs: String {
        let logs = (retiredCoordinators + coordinators).enumerated().map { index, coordinator in
            "coordinator #\(index + 1):\n" + coordinator.output
        }
        return (logs + (retiredWorkers + workers).map { "\($0.name):\n" + $0.process.output })
            .joined(separator: "\n")
    }

    /// SIGTERM to everyone; each exits 0 (a worker the test killed stays dead of its SIGKILL).
    public func stop() async throws {
        for worker in workers { worker.process.signal(SIGTERM) }
        for worker in workers {
            let status = await worker.process.exitStatus()
            #expect(status.map { $0.signalled ? $0.status == SIGKILL : $0.status == 0 } == true,
                    "\(worker.name) did not stop cleanly\n\(worker.process.output)")
        }
        // The standbys first, so the active one drains without a take-over under it.
        for coordinator in coordinators.reversed() {
            coordinator.signal(SIGCONT)
            coordinator.signal(SIGTERM)
            let status = await coordinator.exitStatus()
            #expect(status?.signalled == false && status?.status == 0, "\(coordinator.output)")
        }
        await repository.client.close()
    }
}
