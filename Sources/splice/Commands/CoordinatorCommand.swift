import Foundation
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
        help: "API client keys, one Z85 key or .pub file per line; with CURVE the API admits these and the "
            + "coordinator's own key.",
        environment: "SPLICE_ADMIN_KEYS")
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
        help: "Only accept jobs whose input lies in this folder (links resolved; repeatable). Recommended for a "
            + "shared cluster: a client cannot make the coordinator read its own files.",
        isRepeatable: true)
    static let sourceProtocols = Option<String>(
        "source-protocols", valueName: "list",
        help: "Protocols a job's input may use, comma-separated: file (absolute paths), http, https… Anything "
            + "else FFmpeg could open (concat:, subfile:, devices) is refused at submit.",
        default: "file,http,https", environment: "SPLICE_SOURCE_PROTOCOLS")
    static let metricsEndpoint = DaemonOptions.metricsEndpoint(
        default: "127.0.0.1:9450", serves: "the status page (/), /metrics, /healthz and /readyz")
    static let outputRoot = Option<String>(
        "output-root", valueName: "dir",
        help: "Only accept jobs whose output lies in this folder (links resolved; repeatable). Recommended for a "
            + "shared cluster: a client cannot make the coordinator overwrite its own files.",
        isRepeatable: true)

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
            """,
        arguments: [database, stateDirectory, workersEndpoint, apiEndpoint, dataEndpoint, spool, secretKey, adminKeys, insecure,
                    leaseSeconds, maxAttempts, backupAfter, inputRoot, outputRoot, sourceProtocols, metricsEndpoint, verify]
                    + DaemonOptions.arguments,
        onShutdown: .notify)

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
    let defaultVerify: VerifyMode?
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
        leaseSeconds = try arguments.value(Self.leaseSeconds)
        maxAttempts = try arguments.value(Self.maxAttempts)
        backupAfter = try arguments.value(Self.backupAfter)
        inputRoots = arguments.values(Self.inputRoot)
        outputRoots = arguments.values(Self.outputRoot)
        sourceProtocols = try arguments.value(Self.sourceProtocols).split(separator: ",").map(String.init)
        metricsEndpoint = try arguments.value(Self.metricsEndpoint)
        defaultVerify = arguments[Self.verify]
        daemon = DaemonOptions(arguments)
    }

    func validate() throws {
        guard (1...86_400).contains(leaseSeconds) else {
            throw UsageError("--lease-seconds must be from 1 to 86400; got \(leaseSeconds)")
        }
        guard (1...100).contains(maxAttempts) else {
            throw UsageError("--max-attempts must be from 1 to 100; got \(maxAttempts)")
        }
        guard backupAfter == 0 || (100...10_000).contains(backupAfter) else {
            throw UsageError("--backup-after must be 0 (no backups) or from 100 to 10000 percent; got \(backupAfter)")
        }
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
        var configuration = CoordinatorConfiguration(
            database: store, spool: spool.map { URL(fileURLWithPath: $0) } ?? state.appendingPathComponent("spool"),
            workersEndpoint: workersEndpoint, apiEndpoint: apiEndpoint, keys: keys,
            adminKeys: try adminKeys.map(Self.loadAdminKeys) ?? [], insecure: insecure, maxAttempts: maxAttempts,
            sessions: CoordinatorPolicy(leaseDuration: .seconds(leaseSeconds), backupAfterPercent: backupAfter),
            logger: context.logger)
        // Planning and stitching in children of this very binary: a crash there fails the job only.
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            configuration.mediaTasks = .childProcess(executable: executable)
        }
        configuration.metricsEndpoint = metricsEndpoint.address
        configuration.dataEndpoint = dataEndpoint
        configuration.version = SpliceCommand.version
        configuration.inputRoots = inputRoots.map(SubmitCommand.absolutePath)
        configuration.outputRoots = outputRoots.map(SubmitCommand.absolutePath)
        configuration.sourceProtocols = sourceProtocols
        configuration.defaultVerify = defaultVerify
        return configuration
    }

    /// The keys in an `--admin-keys` file: each line a Z85 public key or the path of a `.pub` file
    /// (relative paths from the file's folder); blank lines and `#` comments are skipped.
    static func loadAdminKeys(_ path: String) throws -> [CurvePublicKey] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read --admin-keys file '\(path)'")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        var keys: [CurvePublicKey] = []
        for (number, raw) in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            if let key = try? CurvePublicKey(z85: line) {
                keys.append(key)
                continue
            }
            let file = line.hasPrefix("/") ? line : folder.appendingPathComponent(line).path
            do {
                keys.append(try CurvePublicKey.load(path: file))
            } catch {
                throw UsageError("--admin-keys file '\(path)' line \(number + 1): neither a Z85 public key nor a "
                                 + "readable .pub file (\(error.message))")
            }
        }
        return keys
    }
}
