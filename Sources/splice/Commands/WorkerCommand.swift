import Foundation
import SpliceMedia
import SpliceWire
import SpliceDaemon
import SpliceWorker

/// `splice worker`: a worker daemon. Connects to the coordinator, encodes the segments it is
/// assigned into the shared spool, and drains on SIGTERM (exit 0).
struct WorkerCommand: Command {
    static let coordinator = Option<String>(
        "coordinator", valueName: "endpoint",
        help: "The coordinator's worker endpoint; with standby coordinators, each one's, comma-separated "
            + "(tcp://a:7450,tcp://b:7450): the worker connects to all and works for the active one.",
        default: "tcp://127.0.0.1:7450", environment: "SPLICE_COORDINATOR_ENDPOINT")
    static let slots = Option<Int>(
        "slots", valueName: "n",
        help: "Segments to encode at once (default: the usable cores: the CPU affinity, capped by the cgroup's "
            + "CPU limit).",
        default: UsableCores.ofThisProcess().count, environment: "SPLICE_SLOTS")
    static let codecThreads = Option<Int>(
        "codec-threads", valueName: "n",
        help: "Threads per encoder and decoder (default: usable cores / slots, at least 1; every usable core for a "
            + "segment that finds itself alone).",
        environment: "SPLICE_CODEC_THREADS")
    static let encoders = Option<String>(
        "encoders", valueName: "list",
        help: "The encoders this worker offers, comma-separated (libx264,libx265,aac…; default: every one this FFmpeg "
            + "has). A job that names its encoder (--video-encoder) only goes to workers that offer it: keep slow "
            + "machines off libaom-av1, or a machine whose FFmpeg misbehaves off one codec.",
        environment: "SPLICE_ENCODERS") { $0 }
    static let spool = Option<String>(
        "spool", valueName: "dir",
        help: "The shared spool directory (NFS for many machines), mounted at the same path as on the coordinator; "
            + "without it the worker runs in transfer mode.",
        environment: "SPLICE_SPOOL") { $0 }
    static let dataEndpoint = Option<String>(
        "data-endpoint", valueName: "endpoint",
        help: "Transfer mode: the coordinator's data endpoint, one per --coordinator endpoint (default: each "
            + "--coordinator host, port 7452).",
        environment: "SPLICE_DATA_ENDPOINT") { $0 }
    static let scratch = Option<String>(
        "scratch", valueName: "dir",
        help: "Transfer mode: where excerpts and results wait, emptied at start and exit (default: a private temp dir).",
        environment: "SPLICE_SCRATCH") { $0 }
    static let scratchLimit = Option<Int64>(
        "scratch-limit", valueName: "bytes",
        help: "Transfer mode: bytes scratch may hold; a segment whose excerpt would not fit is refused (no attempt spent).",
        environment: "SPLICE_SCRATCH_LIMIT", expected: "a positive number of bytes") { Int64($0).flatMap { $0 > 0 ? $0 : nil } }
    static let secretKey = Option<String>(
        "secret-key", valueName: "file", help: "This worker's CURVE secret key (from `splice keys generate`).",
        environment: "SPLICE_SECRET_KEY") { $0 }
    static let serverKey = Option<String>(
        "server-key", valueName: "file",
        help: "The coordinator's public key file (NAME.pub); with --secret-key enables CURVE. Several coordinators "
            + "share one, or give each one's, comma-separated, in --coordinator's order.",
        environment: "SPLICE_SERVER_KEY") { $0 }
    static let joinToken = Option<String>(
        "join-token", valueName: "token",
        help: "A join token (`splice workers join-token create`): presented once so the coordinator enrolls this "
            + "worker's key. Needs --server-key; without --secret-key the worker makes a key pair of its own.",
        environment: "SPLICE_JOIN_TOKEN") { $0 }
    static let name = Option<String>(
        "name", valueName: "name", help: "The name this worker reports (not its identity: its key is).",
        default: ProcessInfo.processInfo.hostName, environment: "SPLICE_WORKER_NAME")
    static let metricsEndpoint = DaemonOptions.metricsEndpoint(
        default: "127.0.0.1:9451", serves: "/metrics, /healthz and /readyz")
    static let drainTimeout = Option<MediaTime>(
        "drain-timeout", valueName: "seconds",
        help: "After SIGTERM, how long running segments may take before they are handed back.",
        default: MediaTime(seconds: 300), expected: "a number of seconds like 300 or 2.5"
    ) { word in MediaTime(parsing: word).flatMap { $0 >= .zero ? $0 : nil } }

    static let configuration = CommandConfiguration(
        name: "worker", abstract: "Run a worker daemon that encodes segments for a coordinator.",
        discussion: """
            With --spool, every ASSIGN's output goes to a path the coordinator chooses inside the shared \
            spool, so mount the spool at the same path on the coordinator and on every worker. Without \
            it (transfer mode) the worker fetches each segment's source excerpt from the coordinator's \
            data endpoint into --scratch and hands the result back the same way. On SIGTERM the \
            worker takes no new segments, lets running ones finish (or hands them back after \
            --drain-timeout), waits for its results to be acknowledged and exits 0. Logs are \
            key=value lines on standard error. Metrics and health checks for operators are served at \
            http://127.0.0.1:9451/metrics (--metrics-endpoint); when that default port is taken (another \
            worker on the machine) the next free one is used and logged, while a port given explicitly \
            must be free.
            """,
        arguments: [coordinator, slots, codecThreads, encoders, spool, dataEndpoint, scratch, scratchLimit, secretKey, serverKey,
                    joinToken, name, drainTimeout,
                    metricsEndpoint] + DaemonOptions.arguments,
        onShutdown: .notify, environment: [.ffmpegLog])

    let coordinator: String
    let slots: Int
    let codecThreads: Int?
    let encoders: [String]?
    let spool: String?
    let dataEndpoint: String?
    let scratch: String?
    let scratchLimit: Int64?
    let secretKey: String?
    let serverKey: String?
    let joinToken: String?
    let name: String
    let drainTimeout: MediaTime
    let metricsEndpoint: MetricsEndpointSetting
    /// Neither `--metrics-endpoint` nor `SPLICE_METRICS_ENDPOINT` was given.
    let metricsEndpointIsDefault: Bool
    let daemon: DaemonOptions

    init(_ arguments: ParsedArguments) throws {
        coordinator = try arguments.value(Self.coordinator)
        slots = try arguments.value(Self.slots)
        codecThreads = arguments[Self.codecThreads]
        encoders = arguments[Self.encoders].map(ClientOptions.list)
        spool = arguments[Self.spool]
        dataEndpoint = arguments[Self.dataEndpoint]
        scratch = arguments[Self.scratch]
        scratchLimit = arguments[Self.scratchLimit]
        secretKey = arguments[Self.secretKey]
        serverKey = arguments[Self.serverKey]
        joinToken = arguments[Self.joinToken]
        name = try arguments.value(Self.name)
        drainTimeout = try arguments.value(Self.drainTimeout)
        metricsEndpoint = try arguments.value(Self.metricsEndpoint)
        metricsEndpointIsDefault = !arguments.contains(Self.metricsEndpoint.spec)
        daemon = DaemonOptions(arguments)
    }

    func validate() throws {
        guard slots >= 1 else { throw UsageError("--slots must be at least 1; got \(slots)") }
        if let codecThreads, !(1...256).contains(codecThreads) {
            throw UsageError("--codec-threads must be from 1 to 256; got \(codecThreads)")
        }
        if let joinToken {
            guard serverKey != nil else {
                throw UsageError("--join-token needs --server-key: the coordinator's public key, to join it over CURVE")
            }
            guard joinToken.hasPrefix("splj_"), joinToken.utf8.count <= 128 else {
                throw UsageError("--join-token is not a join token (they start with splj_; "
                                 + "`splice workers join-token create` makes one)")
            }
        } else if (secretKey == nil) != (serverKey == nil) {
            throw UsageError("--secret-key and --server-key go together: give both to use CURVE, or neither")
        }
        if let encoders {
            let unknown = encoders.filter { !AvailableEncoders.names.contains($0) }
            guard unknown.isEmpty, !encoders.isEmpty else {
                throw UsageError("--encoders: " + (encoders.isEmpty ? "names no encoder" : "this FFmpeg has no "
                    + unknown.joined(separator: ", ")) + "; it has " + AvailableEncoders.names.joined(separator: ", "))
            }
        }
        guard !name.isEmpty else { throw UsageError("--name must not be empty") }
        let coordinators = ClientOptions.list(coordinator)
        guard !coordinators.isEmpty else { throw UsageError("--coordinator names no endpoint") }
        if let serverKey, ClientOptions.list(serverKey).count > 1,
           ClientOptions.list(serverKey).count != coordinators.count {
            throw UsageError("--server-key: \(ClientOptions.list(serverKey).count) keys for \(coordinators.count) "
                             + "coordinators; give one key they share, or one per --coordinator endpoint in the same order")
        }
        if let dataEndpoint, ClientOptions.list(dataEndpoint).count != coordinators.count {
            throw UsageError("--data-endpoint: \(ClientOptions.list(dataEndpoint).count) endpoints for "
                             + "\(coordinators.count) coordinators; give one per --coordinator endpoint in the same order")
        }
    }

    static func directory(_ path: String) -> URL {
        URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        var configuration = WorkerConfiguration(
            coordinatorEndpoint: coordinator, slots: slots,
            spool: spool.map(Self.directory),
            name: name, drainTimeout: .milliseconds(drainTimeout.count(of: MediaTime(value: 1, timescale: 1000)))
        )
        configuration.software = "splice " + SpliceCommand.version
        configuration.version = SpliceCommand.version
        configuration.metricsEndpoint = metricsEndpoint.address
        configuration.metricsEndpointIsDefault = metricsEndpointIsDefault
        configuration.codecThreads = codecThreads
        if let encoders { configuration.encoders = encoders }
        configuration.dataEndpoint = dataEndpoint
        configuration.scratch = scratch.map(Self.directory)
        configuration.scratchLimit = scratchLimit
        if let serverKey, secretKey != nil || joinToken != nil {
            let keys = try ClientOptions.list(serverKey).map { try CurvePublicKey.load(path: $0) }
            guard let first = keys.first else { throw UsageError("--server-key names no key file") }
            // A joining worker without a key of its own makes one: pods come and go, and
            // `splice workers prune` revokes the keys of those gone.
            let own = try secretKey.map { try CurveKeyPair.load(secretKeyPath: $0) } ?? CurveKeyPair.generate()
            configuration.curve = (keys: own, serverKey: first)
            if keys.count > 1 { configuration.coordinatorKeys = keys }
        }
        configuration.joinToken = joinToken
        let logger = self.daemon.logger(from: context.logger)
        let worker = try WorkerDaemon(configuration: configuration, logger: logger)
        return await ServiceRunner.run(worker, until: context.shutdown, logger: logger)
    }
}
