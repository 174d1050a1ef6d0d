public import Foundation

/// The coordinators' leadership in the store: one row (`coordinator_leader`) that the active
/// coordinator holds by a lease it renews, and an epoch raised by one at every take-over — the
/// fencing token every write of a coordinator carries (Migrations/0008_coordinator_leadership.sql,
/// docs/store.md, Leadership and the fence).
///
/// Every call runs on the connection it is given: a coordinator keeps one connection of its own
/// for leadership, apart from its pools, so that renewing never waits behind its other work. Time
/// is the database's (`now()`): the coordinators' clocks are never compared with each other.
public struct LeaderLease: Sendable {
    /// Who asks: this coordinator process and what it tells the others about itself.
    public struct Candidate: Sendable, Hashable {
        /// Fresh for every process: a restarted coordinator is a new candidate.
        public var instance: UUID
        /// For people (the host name, or `--name`).
        public var name: String
        /// Where the others send clients and workers while this one is active.
        public var apiEndpoint: String?
        public var workersEndpoint: String?
        public var metricsEndpoint: String?
        /// The HTTP API's base URL (`http://HOST:PORT/`), when it serves one.
        public var httpEndpoint: String?

        public init(instance: UUID = UUID(), name: String, apiEndpoint: String? = nil, workersEndpoint: String? = nil,
                    metricsEndpoint: String? = nil, httpEndpoint: String? = nil) {
            self.instance = instance
            self.name = name
            self.apiEndpoint = apiEndpoint
            self.workersEndpoint = workersEndpoint
            self.metricsEndpoint = metricsEndpoint
            self.httpEndpoint = httpEndpoint
        }
    }

    /// The leadership row as read.
    public struct Record: Sendable, Equatable {
        /// The current epoch (0 before any coordinator ever held it).
        public var epoch: Int64
        public var holder: UUID?
        public var holderName: String?
        public var apiEndpoint: String?
        public var workersEndpoint: String?
        public var metricsEndpoint: String?
        public var httpEndpoint: String?
        public var acquiredAt: Date?
        /// Whether the lease had not run out when it was read (the database's clock).
        public var isLive: Bool
        /// How long it had left then (zero once it has run out).
        public var remaining: Duration

        public init(epoch: Int64, holder: UUID? = nil, holderName: String? = nil, apiEndpoint: String? = nil,
                    workersEndpoint: String? = nil, metricsEndpoint: String? = nil, httpEndpoint: String? = nil,
                    acquiredAt: Date? = nil, isLive: Bool = false, remaining: Duration = .zero) {
            self.epoch = epoch
            self.holder = holder
            self.holderName = holderName
            self.apiEndpoint = apiEndpoint
            self.workersEndpoint = workersEndpoint
            self.metricsEndpoint = metricsEndpoint
            self.httpEndpoint = httpEndpoint
            self.acquiredAt = acquiredAt
            self.isLive = isLive
            self.remaining = remaining
        }

        /// The active coordinator: the holder while its lease is live, nobody otherwise.
        public var active: Record? { isLive && holder != nil ? self : nil }
    }

    /// What a try to become active found.
    public enum Acquisition: Sendable, Equatable {
        /// This candidate holds the lease now, at `epoch`; `previous` is who held it before
        /// (epoch 0: nobody ever), and whether its lease had run out.
        case acquired(epoch: Int64, previousEpoch: Int64, previousHolder: String?, previousLapsed: Bool)
        /// Someone else holds a live lease.
        case held(Record)
    }

    /// The key of the fence's advisory lock ("SPLICEFN" in ASCII; the migration spells it out).
    public static let fenceLockKey: Int64 = 0x5350_4C49_4345_464E

    public let candidate: Candidate
    /// How long a lease lasts unrenewed.
    public let duration: Duration

    public init(candidate: Candidate, duration: Duration) {
        self.candidate = candidate
        self.duration = duration
    }

    private var leaseMilliseconds: Int64 { Int64(duration.components.seconds) * 1000
        + Int64(duration.components.attoseconds / 1_000_000_000_000_000) }

    // MARK: - Taking it

    /// Takes the lease when it has run out — or when this candidate holds it already, or `force`
    /// (the embedded database, which no other coordinator can share) — raising the epoch, and
    /// records the change in `coordinator_events`. One statement. Call ``fence(epoch:on:lockWait:)``
    /// before writing anything under the new epoch.
    public func acquire(force: Bool = false, on connection: PostgresConnection) async throws -> Acquisition {
        let rows = try await connection.query("""
            WITH previous AS (
                SELECT epoch, holder, holder_name, expires_at FROM coordinator_leader WHERE id = 1 FOR UPDATE
            ), taken AS (
                UPDATE coordinator_leader l
                SET epoch = l.epoch + 1, holder = \(candidate.instance), holder_name = \(candidate.name),
                    api_endpoint = \(candidate.apiEndpoint), workers_endpoint = \(candidate.workersEndpoint),
                    metrics_endpoint = \(candidate.metricsEndpoint), http_endpoint = \(candidate.httpEndpoint),
                    acquired_at = now(), renewed_at = now(),
                    expires_at = now() + \(leaseMilliseconds) * interval '1 millisecond'
                FROM previous
                WHERE l.id = 1 AND (previous.expires_at < now() OR previous.holder = \(candidate.instance) OR \(force))
                RETURNING l.epoch, previous.epoch AS previous_epoch, previous.holder_name AS previous_name,
                          previous.expires_at < now() AS lapsed, previous.holder = \(candidate.instance) AS own
            ), event AS (
                INSERT INTO coordinator_events (epoch, kind, holder, holder_name, previous_epoch, previous_holder_name,
                                                detail)
                SELECT epoch, 'acquired', \(candidate.instance), \(candidate.name), previous_epoch, previous_name,
                       CASE WHEN previous_epoch = 0 THEN 'the first coordinator'
                            WHEN own THEN 'taken again by its holder'
                            WHEN lapsed THEN 'the previous lease had run out'
                            ELSE 'taken over while the previous lease ran (embedded database)' END
                FROM taken
            )
            SELECT epoch, previous_epoch, previous_name, coalesce(lapsed, true) FROM taken
            """)
        guard let row = rows.first else { return .held(try await current(on: connection)) }
        return .acquired(epoch: try row.decode(at: 0), previousEpoch: try row.decode(at: 1),
                         previousHolder: try row.decode(at: 2), previousLapsed: try row.decode(at: 3))
    }

    /// Waits until no write of an earlier epoch is in flight: takes the fence lock exclusively
    /// (so every transaction that passed the fence before the epoch changed has ended), and when
    /// it is not granted within `lockWait`, terminates the sessions holding it — a deposed
    /// coordinator stopped in the middle of a transaction — and tries again. Returns how many
    /// sessions it terminated. From then on every write of an earlier epoch fails.
    @discardableResult
    public func fence(epoch: Int64, on connection: PostgresConnection, lockWait: Duration = .milliseconds(500),
                      attempts: Int = 20) async throws -> Int {
        let wait = max(1, Int64(lockWait.components.seconds) * 1000
            + Int64(lockWait.components.attoseconds / 1_000_000_000_000_000))
        // The sessions signalled, each once however many tries it takes to exit (a loaded server).
        var terminated = Set<Int32>()
        for _ in 0..<attempts {
            do {
                try await connection.withTransaction { connection in
                    try await connection.query("SELECT set_config('lock_timeout', \(String(wait)), true)")
                    try await connection.query("SELECT pg_advisory_xact_lock(\(Self.fenceLockKey))")
                }
                return terminated.count
            } catch let error as StoreError where error.sqlState == SQLState.lockNotAvailable {
                let rows = try await connection.query("""
                    SELECT l.pid, pg_terminate_backend(l.pid, \(wait)) FROM pg_locks l
                    WHERE l.locktype = 'advisory' AND l.classid = \(Self.fenceLockKey >> 32)::oid
                        AND l.objid = \(Self.fenceLockKey & 0xFFFF_FFFF)::oid AND l.objsubid = 1
                        AND l.mode = 'ShareLock' AND l.granted AND l.pid <> pg_backend_pid()
                        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """)
                for row in rows { terminated.insert(try row.decode(Int32.self, at: 0)) }
            }
        }
        throw StoreError(.fenced, "epoch \(epoch): writes of an earlier epoch were still in flight after "
                             + "\(attempts) tries to end them", isRetryable: true)
    }

    // MARK: - Holding it

    /// Extends the lease by ``duration`` from now, while `epoch` is this candidate's; false when it
    /// is not any more (another coordinator took over).
    public func renew(epoch: Int64, on connection: PostgresConnection) async throws -> Bool {
        try await connection.query("""
            UPDATE coordinator_leader
            SET renewed_at = now(), expires_at = now() + \(leaseMilliseconds) * interval '1 millisecond'
            WHERE id = 1 AND epoch = \(epoch) AND holder = \(candidate.instance)
            """).affectedRows == 1
    }

    /// Gives the lease up at once (a graceful shutdown), so a standby takes over without waiting
    /// for it to run out; recorded in `coordinator_events`. Nothing when `epoch` is no longer ours.
    public func release(epoch: Int64, on connection: PostgresConnection) async throws {
        try await connection.query("""
            WITH released AS (
                UPDATE coordinator_leader SET expires_at = now()
                WHERE id = 1 AND epoch = \(epoch) AND holder = \(candidate.instance)
                RETURNING epoch
            )
            INSERT INTO coordinator_events (epoch, kind, holder, holder_name, detail)
            SELECT epoch, 'released', \(candidate.instance), \(candidate.name), 'shut down' FROM released
            """)
    }

    // MARK: - Reading it

    /// The leadership row now.
    public func current(on connection: PostgresConnection) async throws -> Record {
        try await Self.current(on: connection)
    }

    /// The leadership row now (any connection: a standby's reads, the operators' view).
    public static func current(on connection: PostgresConnection) async throws -> Record {
        try await current { try await connection.query($0) }
    }

    /// The leadership row now, read through `client`.
    public static func current(client: PostgresClient) async throws -> Record {
        try await current { try await client.query($0) }
    }

    private static func current(_ run: (PostgresQuery) async throws -> PostgresRows) async throws -> Record {
        let rows = try await run("""
            SELECT epoch, holder, holder_name, api_endpoint, workers_endpoint, metrics_endpoint, acquired_at,
                   expires_at > now() AS live,
                   CASE WHEN isfinite(expires_at) AND expires_at > now()
                        THEN (extract(epoch FROM expires_at - now()) * 1000)::bigint ELSE 0 END AS remaining_ms,
                   http_endpoint
            FROM coordinator_leader WHERE id = 1
            """)
        guard let row = rows.first else {
            throw StoreError(.notFound, "coordinator_leader has no row: is the database migrated?", isRetryable: false)
        }
        return Record(
            epoch: try row.decode(at: 0), holder: try row.decode(at: 1), holderName: try row.decode(at: 2),
            apiEndpoint: try row.decode(at: 3), workersEndpoint: try row.decode(at: 4),
            metricsEndpoint: try row.decode(at: 5), httpEndpoint: try row.decode(at: 9), acquiredAt: try row.decode(at: 6),
            isLive: try row.decode(at: 7),
            remaining: .milliseconds(try row.decode(Int64.self, at: 8)))
    }
}
