public import Foundation
public import SpliceHTTP
public import SpliceWire

/// Everything a ``WorkerDaemon`` is started with (`splice worker`'s flags).
public struct WorkerConfiguration: Sendable {
    /// The coordinator's worker endpoint, `tcp://HOST:7450`.
    public var coordinatorEndpoint: String
    /// How many segments to encode at once.
    public var slots: Int
    /// The shared spool directory. Every ASSIGN's `outputPath` must lie inside it: coordinator and
    /// workers mount the spool at the same path. Nil: transfer mode (``WorkerStorage/transfer``),
    /// each segment's source excerpt and result go over the coordinator's data endpoint.
    public var spool: URL?
    /// Transfer mode: the coordinator's data endpoint; nil: the coordinator's host, port 7452.
    public var dataEndpoint: String?
    /// Transfer mode: where excerpts and results are kept while a segment runs; emptied at start
    /// and exit. Nil: a private directory under the system's temporary directory, removed at exit.
    public var scratch: URL?
    /// Transfer mode: the bytes of excerpts (and the results that replace them) scratch may hold
    /// at once; an ASSIGN whose excerpt would not fit is refused (FAIL `scratch-full`, which
    /// spends no attempt). Nil: no limit but the disk's.
    public var scratchLimit: Int64?
    /// The worker's own CURVE key pair and the coordinator's public key; nil without CURVE
    /// (loopback or a trusted network only).
    public var curve: (keys: CurveKeyPair, serverKey: CurvePublicKey)?
    /// The name in HELLO and in logs (not an identity: the key is).
    public var name: String
    /// After SIGTERM, how long running segments may take before they are handed back (FAIL `drained`).
    public var drainTimeout: Duration
    /// After the drain timeout, how long to keep trying to get results acknowledged before exiting.
    public var flushTimeout: Duration
    /// How long before a lease's deadline (on this worker's clock) its encode is aborted when the
    /// coordinator has not acknowledged extensions. Capped at a quarter of the lease.
    public var leaseSafetyMargin: Duration
    /// How often HELLO is resent before a WELCOME gives the coordinator's heartbeat interval.
    public var helloInterval: Duration
    /// How often the session's timers are checked (HELLO, PROGRESS, HEARTBEAT, resends, leases).
    public var tickInterval: Duration
    /// libzmq's first reconnect delay; it doubles up to ``reconnectIntervalMax``.
    public var reconnectInterval: Duration
    public var reconnectIntervalMax: Duration
    /// HELLO's `software` (the Splice version), for the coordinator's logs.
    public var software: String
    /// Encoder threads per segment; nil: ``usableCores`` ÷ slots (at least 1), or every usable
    /// core for a segment that finds itself alone (``EncoderThreads``).
    public var codecThreads: Int?
    /// The cores this process may use, divided among the slots; read from the process's CPU
    /// affinity and cgroup when the configuration is made.
    public var usableCores: UsableCores
    /// Where the operators' endpoint listens (`/metrics`, `/healthz`, `/readyz`); nil for none.
    /// `splice worker` defaults to `127.0.0.1:9451`.
    public var metricsEndpoint: HTTPAddress?
    /// Whether ``metricsEndpoint`` is `splice worker`'s default rather than an address the
    /// operator chose: a busy default port moves to the next free one (a second worker on the
    /// host), while a busy chosen one stops the worker at start.
    public var metricsEndpointIsDefault = false
    /// The version `splice_build_info` shows.
    public var version = "dev"
    /// Without CURVE, the routing id this worker presents, fresh for every configuration (each
    /// process): it keeps one identity across reconnections (without it the ROUTER would name
    /// every new connection anew, and the coordinator would see a new worker after each one, and
    /// release the old one's leases), while a restarted process is a new worker.
    public let connectionID = "w:" + UUID().uuidString.lowercased()

    /// A configuration with the defaults of `splice worker`; `slots` nil: one per usable core.
    public init(coordinatorEndpoint: String = "tcp://127.0.0.1:7450",
                slots: Int? = nil, spool: URL?,
                curve: (keys: CurveKeyPair, serverKey: CurvePublicKey)? = nil,
                name: String = ProcessInfo.processInfo.hostName, drainTimeout: Duration = .seconds(300)) {
        self.coordinatorEndpoint = coordinatorEndpoint
        self.usableCores = UsableCores.ofThisProcess()
        self.slots = slots ?? usableCores.count
        self.spool = spool
        self.curve = curve
        self.name = name
        self.drainTimeout = drainTimeout
        self.flushTimeout = .seconds(10)
        self.leaseSafetyMargin = .seconds(5)
        self.helloInterval = .seconds(1)
        self.tickInterval = .milliseconds(50)
        self.reconnectInterval = .milliseconds(100)
        self.reconnectIntervalMax = .seconds(5)
        self.codecThreads = nil
        self.software = "splice"
    }

    /// The data endpoint as used: ``dataEndpoint``, or the coordinator endpoint with port 7452.
    var effectiveDataEndpoint: String {
        if let dataEndpoint { return dataEndpoint }
        guard let colon = coordinatorEndpoint.lastIndex(of: ":"),
              coordinatorEndpoint[coordinatorEndpoint.index(after: colon)...].allSatisfy(\.isNumber) else {
            return coordinatorEndpoint + ":7452"
        }
        return coordinatorEndpoint[..<colon] + ":7452"
    }

    /// The DEALER's options: `immediate` so sends fail visibly while cut off; with CURVE, a fixed
    /// routing id derived from the key so a restarted worker takes over its route at once
    /// (ROUTER_HANDOVER); without keys, `connectionID`.
    var wireOptions: WireOptions {
        var options = WireOptions.dealer(
            routingID: RoutingID(curve.map { "w:" + $0.keys.publicKey.z85 } ?? connectionID),
            curve: curve.map { .client(keys: $0.keys, serverKey: $0.serverKey) } ?? .none,
            immediate: true
        )
        options.reconnectInterval = reconnectInterval
        options.reconnectIntervalMax = reconnectIntervalMax
        return options
    }
}
