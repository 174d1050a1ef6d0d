import Foundation
import SpliceCore
import SpliceHTTP
import SpliceStore
import SpliceWire
import SpliceCoordinator
import SpliceDaemon
import SpliceMedia

/// `splice coordinator`: the coordinator service. Runs until SIGTERM/SIGINT, then drains (stops
/// accepting, finishes in-flight commits, tells the workers) and exits 0. Kill -9 is safe too:
/// everything is in Postgres, and the next start continues every job.
struct CoordinatorCommand: Command {
    static let database = Option<String>(
        "database", valueName: "url",
        help: "PostgreSQL URL or key=value string; without it an embedded server runs in <state-dir>/postgres.",
        environment: "SPLICE_DATABASE_URL")
    static let stateDirectory = Option<String>(
        "state-dir", valueName: "dir",
        help: "Where the embedded database and the default spool live (default: $HOME/.splice).",
        environment: "SPLICE_STATE_DIR")
    static let workersEndpoint = Option<String>(
        "workers-endpoint", valueName: "endpoint", help: "Where workers connect.", default: "tcp://*:7450",
        environment: "SPLICE_WORKERS_ENDPOINT")
    static let apiEndpoint = Option<String>(
        "api-endpoint", valueName: "endpoint", help: "Where `splice submit/status/jobs/cancel/workers` connect.",
        default: "tcp://*:7451", environment: "SPLICE_API_ENDPOINT")
    static let dataEndpoint = Option<String>(
        "data-endpoint", valueName: "endpoint",
        help: "Where transfer-mode workers (started without --spool) fetch source excerpts and hand results back "
            + "(default: the workers endpoint's host, port 7452).",
        environment: "SPLICE_DATA_ENDPOINT")
    static let spool = Option<String>(
        "spool", valueName: "dir",
        help: "Segment files, shared with every worker (NFS for many machines; default: <state-dir>/spool).",
        environment: "SPLICE_SPOOL")
    static let secretKey = Option<String>(
        "secret-key", valueName: "file",
        help: "The coordinator's CURVE secret key (from `splice keys generate`): turns CURVE and ZAP on for both "
            + "endpoints.",
        environment: "SPLICE_SECRET_KEY")
    static let adminKeys = Option<String>(
        "admin-keys", valueName: "file",
        help: "API client keys, one Z85 key or .pub file per line, optionally followed by its scopes "
            + "(read,submit,cancel,admin; default all); with CURVE the API admits these and the coordinator's own key.",
        environment: "SPLICE_ADMIN_KEYS")
    static let httpEndpoint = Option<String>(
        "http-endpoint", valueName: "host:port",
        help: "Serve the HTTP API (jobs over REST, event streams, docs/api.md) here, e.g. 127.0.0.1:8080; off by "
            + "default. Put nginx in front for HTTPS.",
        default: "off", environment: "SPLICE_HTTP_ENDPOINT")
    static let httpRateLimit = Option<Int>(
        "http-rate-limit", valueName: "per-second",
        help: "HTTP API requests a second per token without a rate of its own (bursts of twice that).", default: 50,
        environment: "SPLICE_HTTP_RATE_LIMIT")
    static let httpMaxConnections = Option<Int>(
        "http-max-connections", valueName: "count", help: "HTTP API connections open at once.", default: 1024,
        environment: "SPLICE_HTTP_MAX_CONNECTIONS")
    static let webhookURL = Option<String>(
        "webhook-url", valueName: "url",
        help: "Where the events of jobs without a webhook of their own are POSTed (http or https).",
        environment: "SPLICE_WEBHOOK_URL")
    static let webhookSecret = Option<String>(
        "webhook-secret", valueName: "file",
        help: "A file whose first line is the secret that signs webhooks (16 to 256 bytes); needed by --webhook-url "
            + "and by jobs that bring no secret of their own.",
        environment: "SPLICE_WEBHOOK_SECRET_FILE")
    static let webhookRetrySeconds = Option<Int>(
        "webhook-retry-seconds", valueName: "seconds",
        help: "Wait before a failed webhook delivery is tried again; doubles (jittered) up to an hour, for 24 hours.",
        default: 5)
    static let insecure = Flag(
        "insecure", help: "Allow listening on a non-loopback address without CURVE keys.", environment: "SPLICE_INSECURE")
    static let leaseSeconds = Option<Int>(
        "lease-seconds", valueName: "seconds", help: "How long a segment lease lasts without news from its worker.",
        default: 60)
    static let maxAttempts = Option<Int>(
        "max-attempts", valueName: "count", help: "Attempts per segment before the job fails.", default: 5)
    static let backupAfter = Option<Int>(
        "backup-after", valueName: "percent",
        help: "Once a job has nothing left to claim, start a backup attempt of a segment on an idle worker when it "
            + "has run this many percent of the time its cost predicts at the job's pace so far (the first "
            + "result wins; 0 turns backups off).",
        default: 150)
    static let inputRoot = Option<String>(
        "input-root", valueName: "dir",
        help: "Only accept jobs whose input lies in this folder (links resolved; repeatable), or under this "
            + "object prefix (s3://BUCKET/PREFIX). Recommended for a shared cluster: a client cannot make the "
            + "coordinator read its own files.",
        isRepeatable: true)
    static let sourceProtocols = Option<String>(
        "source-protocols", valueName: "list",
        help: "Protocols a job's input may use, comma-separated: file (absolute paths), http, https, s3 (objects, "
            + "read by the coordinator with its AWS_* credentials)… Anything else FFmpeg could open (concat:, "
            + "subfile:, devices) is refused at submit.",
        default: "file,http,https,s3", environment: "SPLICE_SOURCE_PROTOCOLS")
    static let metricsEndpoint = DaemonOptions.metricsEndpoint(
        default: "127.0.0.1:9450", serves: "the status page (/), /metrics, /healthz and /readyz")
    static let leaderLease = Option<Seconds>(
        "leader-lease-seconds", valueName: "seconds",
        help: "Standby coordinators: how long the active coordinator's lease lasts unrenewed; a standby takes "
            + "over this long after the active one's last renewal.",
        default: Seconds(milliseconds: 3000), environment: "SPLICE_LEADER_LEASE_SECONDS")
    static let leaderRenew = Option<Seconds>(
        "leader-renew-seconds", valueName: "seconds",
        help: "How often the active coordinator renews its lease (default: a third of --leader-lease-seconds).",
        environment: "SPLICE_LEADER_RENEW_SECONDS")
    static let name = Option<String>(
        "name", valueName: "name",
        help: "This coordinator's name for people: logs, the status page, the standbys' answers (default: the "
            + "host name).",
        default: ProcessInfo.processInfo.hostName, environment: "SPLICE_COORDINATOR_NAME")
    static let advertise = Option<String>(
        "advertise", valueName: "host",
        help: "The host other machines reach this coordinator at, named by the standbys to clients and workers "
            + "where it binds every address (default: the host name; in Kubernetes the pod's IP).",
        environment: "SPLICE_ADVERTISE")
    static let outputRoot = Option<String>(
        "output-root", valueName: "dir",
        help: "Only accept jobs whose output lies in this folder (links resolved; repeatable), or under this "
            + "object prefix (s3://BUCKET/PREFIX). Recommended for a shared cluster: a client cannot make the "
            + "coordinator overwrite its own files.",
        isRepeatable: true)

    static let retention = Option<Int64>(
        "retention", valueName: "duration",
        help: "Delete jobs that finished longer ago than this (30d, 12h…) with their segments, events and spool "
            + "files, every hour, as `splice jobs prune` does (default: keep them).",
        environment: "SPLICE_RETENTION", expected: "a duration like 30d, 12h, 30m or 3600s"
    ) { TokensCreateCommand.seconds($0) }

    static let verify = Option<VerifyMode>("verify", valueName: "fail|warn",
        help: "Verify every job that does not ask otherwise, as submit --verify does: each segment measured where it "
            + "is encoded, the joins checked after the stitch; fail (the default) fails a job under the thresholds and "
            + "removes its output, warn only reports it.", implied: .fail, environment: "SPLICE_VERIFY")

    static let configuration = CommandConfiguration(
        name: "coordinator", abstract: "Run the coordinator: jobs, leases, workers and the client API.",
        discussion: """
            Plans submitted jobs, leases their segments to `splice worker` daemons, stitches the results \
            and answers `splice submit/status/jobs/cancel/workers`. Postgres holds every job: kill the \
            coordinator at any moment and start it again, and the jobs continue. Logs one line \
            `coordinator ready workers=… api=…` once both endpoints are bound; SIGTERM drains and exits 0.
            Operators: Prometheus metrics, health checks and a status page at http://127.0.0.1:9450/ \
            (--metrics-endpoint).
            Several coordinators may run on one --database (an external PostgreSQL): one is active, the \
            others stand by, answer reads, and take over within seconds when it is gone (see \
            --leader-lease-seconds). With the embedded database a coordinator runs alone.
            """,
        arguments: [database, stateDirectory, workersEndpoint, apiEndpoint, dataEndpoint, spool, secretKey, adminKeys, insecure,
                    leaseSeconds, maxAttempts, backupAfter, inputRoot, outputRoot, sourceProtocols, metricsEndpoint,
                    httpEndpoint, httpRateLimit, httpMaxConnections, webhookURL, webhookSecret, webhookRetrySeconds, verify,
                    leaderLease, leaderRenew, name, advertise, retention]
                    + DaemonOptions.arguments,
        onShutdown: .notify, environment: [.objectStorage])

    let database: String?
    let stateDirectory: String?
    let workersEndpoint: String
    let apiEndpoint: String
    let dataEndpoint: String
    let spool: String?
    let secretKey: String?
    let adminKeys: String?
    let insecure: Bool
    let leaseSeconds: Int
    let maxAttempts: Int
    let backupAfter: Int
    let inputRoots: [String]
    let outputRoots: [String]
    let sourceProtocols: [String]
    let metricsEndpoint: MetricsEndpointSetting
    let leaderLease: Seconds
    let leaderRenew: Seconds?
    let name: String
    let advertise: String?
    let httpEndpoint: HTTPAddress?
    let httpRateLimit: Int
    let httpMaxConnections: Int
    let webhookURL: String?
    let webhookSecret: String?
    let webhookRetrySeconds: Int
    let defaultVerify: VerifyMode?
    let retention: Int64?
    let daemon: DaemonOptions

    /// The data endpoint on the workers endpoint's host, port 7452: a coordinator bound to
    /// 127.0.0.1 keeps its bulk data there too (and a wildcard bind needs CURVE, as for workers).
    static func dataEndpoint(besides workers: String) -> String {
        let scheme = "tcp://"
        guard workers.hasPrefix(scheme), let colon = workers.lastIndex(of: ":"),
              colon > workers.index(workers.startIndex, offsetBy: scheme.count) else { return "tcp://127.0.0.1:7452" }
        return workers[..<colon] + ":7452"
    }

    init(_ arguments: ParsedArguments) throws {
        database = arguments[Self.database].flatMap { $0.isEmpty ? nil : $0 }
        stateDirectory = arguments[Self.stateDirectory]
        workersEndpoint = try arguments.value(Self.workersEndpoint)
        apiEndpoint = try arguments.value(Self.apiEndpoint)
        dataEndpoint = arguments[Self.dataEndpoint].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.dataEndpoint(besides: workersEndpoint)
        spool = arguments[Self.spool]
        secretKey = arguments[Self.secretKey].flatMap { $0.isEmpty ? nil : $0 }
        adminKeys = arguments[Self.adminKeys].flatMap { $0.isEmpty ? nil : $0 }
        insecure = arguments[Self.insecure]
        retention = arguments[Self.retention]
        leaseSeconds = try arguments.value(Self.leaseSeconds)
        maxAttempts = try arguments.value(Self.maxAttempts)
        backupAfter = try arguments.value(Self.backupAfter)
        inputRoots = arguments.values(Self.inputRoot)
        outputRoots = arguments.values(Self.outputRoot)
        sourceProtocols = try arguments.value(Self.sourceProtocols).split(separator: ",").map(String.init)
        metricsEndpoint = try arguments.value(Self.metricsEndpoint)
        leaderLease = try arguments.value(Self.leaderLease)
        leaderRenew = arguments[Self.leaderRenew]
        name = try arguments.value(Self.name)
        advertise = arguments[Self.advertise].flatMap { $0.isEmpty ? nil : $0 }
        let http = try arguments.value(Self.httpEndpoint)
        if ["off", "none", "disabled", ""].contains(http.lowercased()) {
            httpEndpoint = nil
        } else if let address = HTTPAddress(parsing: http) {
            httpEndpoint = address
        } else {
            throw UsageError("--http-endpoint must be HOST:PORT (an IP address or localhost; [IPv6]:PORT) or off; "
                             + "got '\(http)'")
        }
        httpRateLimit = try arguments.value(Self.httpRateLimit)
        httpMaxConnections = try arguments.value(Self.httpMaxConnections)
        webhookURL = arguments[Self.webhookURL].flatMap { $0.isEmpty ? nil : $0 }
        webhookSecret = arguments[Self.webhookSecret].flatMap { $0.isEmpty ? nil : $0 }
        webhookRetrySeconds = try arguments.value(Self.webhookRetrySeconds)
        defaultVerify = arguments[Self.verify]
        daemon = DaemonOptions(arguments)
    }

    /// The leadership timings the flags give.
    var leadership: LeadershipPolicy {
        LeadershipPolicy(lease: leaderLease.duration, renewInterval: leaderRenew?.duration)
    }

    func validate() throws {
        guard (1...86_400).contains(leaseSeconds) else {
            throw UsageError("--lease-seconds must be from 1 to 86400; got \(leaseSeconds)")
        }
        guard (1...100).contains(maxAttempts) else {
            throw UsageError("--max-attempts must be from 1 to 100; got \(maxAttempts)")
        }
        if let retention, retention < 3600 {
            throw UsageError("--retention must be at least 1h (jobs are kept that long after they finish); "
                             + "got \(retention)s")
        }
        guard (1...3600).contains(webhookRetrySeconds) else {
            throw UsageError("--webhook-retry-seconds must be from 1 to 3600; got \(webhookRetrySeconds)")
        }
        guard backupAfter == 0 || (100...10_000).contains(backupAfter) else {
            throw UsageError("--backup-after must be 0 (no backups) or from 100 to 10000 percent; got \(backupAfter)")
        }
        if let problem = leadership.problem { throw UsageError(problem) }
        guard !name.isEmpty else { throw UsageError("--name must not be empty") }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        var context = context
        context.logger = daemon.logger(from: context.logger)
        if adminKeys != nil && secretKey == nil {
            context.logger.warning("admin keys ignored: without --secret-key the API admits any client that reaches it",
                                   ["admin_keys": adminKeys ?? ""])
        }
        let coordinator = Coordinator(configuration: try makeConfiguration(context))
        return await ServiceRunner.run(coordinator, until: context.shutdown, logger: context.logger)
    }

    private func makeConfiguration(_ context: CommandContext) throws -> CoordinatorConfiguration {
        let home = context.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/root"
        let state = URL(fileURLWithPath: stateDirectory ?? home + "/.splice")
        let store: CoordinatorConfiguration.Database
        if let database {
            store = .server(try ConnectionConfiguration(database))
        } else {
            store = .embedded(directory: state.appendingPathComponent("postgres").path)
        }
        let keys = try secretKey.map { try CurveKeyPair.load(secretKeyPath: $0) }
        let admins = try adminKeys.map(Self.loadAdminKeys) ?? []
        var configuration = CoordinatorConfiguration(
            database: store, spool: spool.map { URL(fileURLWithPath: $0) } ?? state.appendingPathComponent("spool"),
            workersEndpoint: workersEndpoint, apiEndpoint: apiEndpoint, keys: keys,
            adminKeys: admins.map(\.key), insecure: insecure, maxAttempts: maxAttempts,
            sessions: CoordinatorPolicy(leaseDuration: .seconds(leaseSeconds), backupAfterPercent: backupAfter),
            logger: context.logger)
        // Planning and stitching in children of this very binary: a crash there fails the job only.
        // What they write before uploading it to object storage is staged in the spool (sized for
        // outputs), not in a small /tmp.
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let staging = configuration.spool.appendingPathComponent("staging")
            try? FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
            configuration.mediaTasks = .childProcess(executable: executable, staging: staging.path)
        }
        configuration.metricsEndpoint = metricsEndpoint.address
        configuration.dataEndpoint = dataEndpoint
        configuration.version = SpliceCommand.version
        configuration.inputRoots = inputRoots.map(SubmitCommand.location)
        configuration.outputRoots = outputRoots.map(SubmitCommand.location)
        configuration.sourceProtocols = sourceProtocols
        configuration.leadership = leadership
        configuration.name = name
        configuration.advertisedHost = advertise
        configuration.adminKeyScopes = Dictionary(admins.compactMap { admin in admin.scopes.map { (admin.key, $0) } },
                                                  uniquingKeysWith: { $0.intersection($1) })
        configuration.httpEndpoint = httpEndpoint
        configuration.httpRateLimit = httpRateLimit
        configuration.httpMaxConnections = httpMaxConnections
        configuration.webhookURL = webhookURL
        configuration.webhookSecret = try webhookSecret.map(Self.loadSecret)
        configuration.webhookRetryBase = .seconds(webhookRetrySeconds)
        configuration.defaultVerify = defaultVerify
        configuration.retention = retention.map { .seconds($0) }
        return configuration
    }

    /// The first line of a `--webhook-secret` file, which only its owner may read.
    static func loadSecret(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read --webhook-secret file '\(path)'")
        }
        let secret = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard (16...256).contains(secret.utf8.count) else {
            throw UsageError("the --webhook-secret file '\(path)' must hold a secret of 16 to 256 bytes on its first line")
        }
        return secret
    }

    /// An admin key and, when its line names them, its scopes (nil: all).
    struct AdminKey {
        var key: CurvePublicKey
        var scopes: Set<APIScope>?
    }

    /// The keys in an `--admin-keys` file: each line a Z85 public key or the path of a `.pub` file
    /// (relative paths from the file's folder), optionally followed by its scopes
    /// (`read,submit`); blank lines and `#` comments are skipped.
    static func loadAdminKeys(_ path: String) throws -> [AdminKey] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read --admin-keys file '\(path)'")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        var keys: [AdminKey] = []
        for (number, raw) in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            func key(_ text: String) throws -> CurvePublicKey {
                if let key = try? CurvePublicKey(z85: text) { return key }
                return try CurvePublicKey.load(path: text.hasPrefix("/") ? text : folder.appendingPathComponent(text).path)
            }
            // The whole line first (a path may hold spaces), then the key and its scopes.
            if let whole = try? key(line) {
                keys.append(AdminKey(key: whole, scopes: nil))
                continue
            }
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            let where_ = "--admin-keys file '\(path)' line \(number + 1)"
            guard parts.count >= 2 else {
                throw UsageError("\(where_): neither a Z85 public key nor a readable .pub file")
            }
            let scopeText = String(parts.last!)
            let keyText = line.dropLast(scopeText.count).trimmingCharacters(in: .whitespaces)
            let scopes: Set<APIScope>
            switch APIScope.parseList(scopeText) {
            case .success(let parsed) where !parsed.isEmpty: scopes = parsed
            case .success: throw UsageError("\(where_): no scope after the key")
            case .failure(let failure): throw UsageError("\(where_): \(failure)")
            }
            do {
                keys.append(AdminKey(key: try key(keyText), scopes: scopes))
            } catch {
                throw UsageError("\(where_): neither a Z85 public key nor a readable .pub file (\(error))")
            }
        }
        return keys
    }
}
