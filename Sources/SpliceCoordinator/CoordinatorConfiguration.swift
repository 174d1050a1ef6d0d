public import Foundation
public import SpliceConcurrency
public import SpliceCore
public import SpliceHTTP
public import SpliceLog
public import SpliceMedia
public import SpliceStore
public import SpliceWire

/// Everything a coordinator needs to start: where its database is, where it listens, the shared
/// spool, its keys, and the timings of leases, heartbeats and its loops. `splice coordinator`
/// builds one from flags and `SPLICE_*` variables; tests build one with short timings.
public struct CoordinatorConfiguration: Sendable {
    /// Where the job store lives.
    public enum Database: Sendable {
        /// An existing PostgreSQL server (`--database URL`).
        case server(ConnectionConfiguration)
        /// A private server in this directory, started (and initialised on first use) by the
        /// coordinator and stopped on graceful shutdown.
        case embedded(directory: String)
    }

    public var database: Database
    /// The ROUTER workers connect to (`tcp://*:7450`).
    public var workersEndpoint: String
    /// The ROUTER the command-line client connects to (`tcp://*:7451`).
    public var apiEndpoint: String
    /// The ROUTER transfer-mode workers fetch source excerpts from and hand results back through
    /// (`splice-data` 1; `splice coordinator` binds `tcp://*:7452`); nil: no data endpoint, so
    /// only shared-spool workers can be served.
    public var dataEndpoint: String?
    /// The spool directory shared with the workers (segment files are written under `jobs/<job>/`).
    public var spool: URL
    /// The coordinator's CURVE key pair: when set, both endpoints are CURVE servers with ZAP
    /// (workers: enrolled, unrevoked keys from the store; API: `adminKeys` and this key).
    public var keys: CurveKeyPair?
    /// Public keys admitted on the API endpoint when CURVE is on.
    public var adminKeys: [CurvePublicKey]
    /// What each admin key may do (docs/api.md, Tokens and scopes); a key not here may do
    /// everything, as does the coordinator's own.
    public var adminKeyScopes: [CurvePublicKey: Set<APIScope>] = [:]
    /// Allow a non-loopback bind without keys.
    public var insecure: Bool
    /// Attempts per segment before it is dead.
    public var maxAttempts: Int
    /// Session timings: heartbeats, liveness, the lease length.
    public var sessions: CoordinatorPolicy
    /// The wait before a failed segment is retried.
    public var segmentRetryBackoff: Backoff
    /// A segment that failed on this many different workers is dead.
    public var deadAfterDistinctWorkers: Int
    /// How often the tables are polled when no NOTIFY arrives (claimable segments, new jobs,
    /// jobs to stitch): LISTEN/NOTIFY only wakes the loops earlier.
    public var pollInterval: Duration
    /// How often expired leases are reaped.
    public var reapInterval: Duration
    /// How often the spool is swept for files of finished jobs.
    public var janitorInterval: Duration
    /// Retention (`--retention 30d`): jobs that finished longer ago than this are deleted with
    /// their segments, events and spool files, every `retentionInterval`, by the active
    /// coordinator. Nil: jobs are kept for good.
    public var retention: Duration?
    /// How often retention runs (hourly).
    public var retentionInterval: Duration = .seconds(3600)
    /// Database connections in the pool.
    public var databaseConnections: Int
    /// How long a graceful shutdown waits for store writes in flight (the workers resend what
    /// was not acknowledged).
    public var drainTimeout: Duration
    /// Lines go here (`key=value` on stderr by default).
    public var logger: Logger
    /// Where planning and stitching run: `splice coordinator` runs them in `splice media-task`
    /// children, so a crash on a client's file fails that job, not the coordinator.
    public var mediaTasks: MediaTaskIsolation = .inProcess
    /// Verify every job that does not say otherwise (`--verify`): a SUBMIT without `quality`
    /// encoding video into a file gets `quality.verify` set to this when it is planned.
    public var defaultVerify: VerifyMode?
    /// The protocols a SUBMIT's input may use (`--source-protocols`): `file` (absolute paths),
    /// `http`, `https`, `s3` (objects the coordinator reads through SpliceMedia's
    /// `StorageRegistry`). Anything else FFmpeg could open (`concat:`, `subfile:`, devices) is refused.
    public var sourceProtocols: [String] = ["file", "http", "https", "s3"]
    /// Folders (or object prefixes, `s3://bucket/prefix`) SUBMIT may read inputs from
    /// (`--input-root`); empty admits any path.
    public var inputRoots: [String] = []
    /// Folders (or object prefixes) SUBMIT may write outputs into (`--output-root`); empty admits any path.
    public var outputRoots: [String] = []
    /// Where the operators' endpoint listens (`/metrics`, `/healthz`, `/readyz`, the status page);
    /// nil for none. `splice coordinator` defaults to `127.0.0.1:9450`.
    public var metricsEndpoint: HTTPAddress?
    /// The version `splice_build_info` and the status page show.
    public var version = "dev"
    /// Several coordinators on one database: the timings of the leadership lease
    /// (docs/coordinator.md, Standby coordinators).
    public var leadership = LeadershipPolicy()
    /// This coordinator's name for people (the leader row, logs, the status page, the other
    /// coordinators' answers): the host name unless `--name` says otherwise.
    public var name = ProcessInfo.processInfo.hostName
    /// The host other machines reach this coordinator at, put into the endpoints it advertises
    /// where it binds every address (`*`, `0.0.0.0`); nil: the host name. (A standby names the
    /// active coordinator's endpoints to clients and workers.)
    public var advertisedHost: String?

    // MARK: - The HTTP API (docs/api.md)

    /// Where the HTTP API listens (`--http-endpoint`); nil: off.
    public var httpEndpoint: HTTPAddress?
    /// Requests a second a token may make when it has no rate of its own (`--http-rate-limit`).
    public var httpRateLimit = 50
    /// Connections the HTTP API keeps open at once (`--http-max-connections`).
    public var httpMaxConnections = 1024
    /// Database connections of the HTTP API's reads (its own pool, beside the coordinator's).
    public var httpDatabaseConnections = 4
    /// How often the event streams look at the jobs they watch.
    public var eventPollInterval: Duration = .milliseconds(250)
    /// Where the events of a job without a webhook of its own go (`--webhook-url`).
    public var webhookURL: String?
    /// The secret that signs webhooks of jobs without their own (`--webhook-secret`).
    public var webhookSecret: String?
    /// The first retry of a failed delivery (doubling, jittered, up to an hour; `--webhook-retry-seconds`).
    public var webhookRetryBase: Duration = .seconds(5)

    /// A configuration with the contract's defaults (`--lease-seconds 60`, `--max-attempts 5`).
    public init(
        database: Database, spool: URL, workersEndpoint: String = "tcp://*:7450", apiEndpoint: String = "tcp://*:7451",
        keys: CurveKeyPair? = nil, adminKeys: [CurvePublicKey] = [], insecure: Bool = false, maxAttempts: Int = 5,
        sessions: CoordinatorPolicy = CoordinatorPolicy(),
        segmentRetryBackoff: Backoff = .segmentRetry, deadAfterDistinctWorkers: Int = 3,
        pollInterval: Duration = .seconds(1), reapInterval: Duration? = nil, janitorInterval: Duration = .seconds(60),
        databaseConnections: Int = 8, drainTimeout: Duration = .seconds(10), logger: Logger = Logger()
    ) {
        self.database = database
        self.spool = spool
        self.workersEndpoint = workersEndpoint
        self.apiEndpoint = apiEndpoint
        self.keys = keys
        self.adminKeys = adminKeys
        self.insecure = insecure
        self.maxAttempts = maxAttempts
        self.sessions = sessions
        self.segmentRetryBackoff = segmentRetryBackoff
        self.deadAfterDistinctWorkers = deadAfterDistinctWorkers
        self.pollInterval = pollInterval
        self.reapInterval = reapInterval ?? min(.seconds(5), sessions.leaseDuration / 4)
        self.janitorInterval = janitorInterval
        self.databaseConnections = databaseConnections
        self.drainTimeout = drainTimeout
        self.logger = logger
    }

    /// Checks what can be checked before anything starts; throws `CoordinatorError` or `WireError`
    /// with a message that names the setting.
    public func validate() throws {
        guard (1...100).contains(maxAttempts) else {
            throw CoordinatorError(.invalidConfiguration, "--max-attempts must be from 1 to 100; got \(maxAttempts)")
        }
        guard sessions.leaseDuration >= .milliseconds(100) else {
            throw CoordinatorError(.invalidConfiguration, "the lease must last at least 100 ms")
        }
        for endpoint in [workersEndpoint, apiEndpoint] + (dataEndpoint.map { [$0] } ?? []) {
            try EndpointSecurity.checkBinding(endpoint, curveEnabled: keys != nil, insecure: insecure)
        }
        if let problem = leadership.problem { throw CoordinatorError(.invalidConfiguration, problem) }
        if let webhookURL, let problem = WebhookURL.problem(webhookURL) {
            throw CoordinatorError(.invalidConfiguration, "--webhook-url \(problem)")
        }
        if let webhookSecret, !(16...256).contains(webhookSecret.utf8.count) {
            throw CoordinatorError(.invalidConfiguration, "the --webhook-secret must be 16 to 256 bytes long")
        }
        if webhookURL != nil && webhookSecret == nil {
            throw CoordinatorError(.invalidConfiguration, "--webhook-url needs --webhook-secret to sign the events with")
        }
        guard (1...1_000_000).contains(httpRateLimit) else {
            throw CoordinatorError(.invalidConfiguration, "--http-rate-limit must be from 1 to 1000000; got \(httpRateLimit)")
        }
        guard (1...100_000).contains(httpMaxConnections) else {
            throw CoordinatorError(.invalidConfiguration,
                                   "--http-max-connections must be from 1 to 100000; got \(httpMaxConnections)")
        }
        guard workersEndpoint != apiEndpoint || workersEndpoint.hasSuffix(":*") else {
            throw CoordinatorError(
                .invalidConfiguration, "the workers and API endpoints are both \(workersEndpoint); give them different ports")
        }
    }
}
