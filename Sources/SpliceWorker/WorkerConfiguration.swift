public import Foundation
public import SpliceHTTP
public import SpliceWire
internal import SpliceMedia

/// Everything a ``WorkerDaemon`` is started with (`splice worker`'s flags).
public struct WorkerConfiguration: Sendable {
    /// The coordinator's worker endpoint, `tcp://HOST:7450` — or several, comma-separated
    /// (`tcp://a:7450,tcp://b:7450`): the worker connects to each and works for the active one
    /// (docs/coordinator.md, Standby coordinators).
    public var coordinatorEndpoint: String
    /// How many segments to encode at once.
    public var slots: Int
    /// The shared spool directory. Every ASSIGN's `outputPath` must lie inside it: coordinator and
    /// workers mount the spool at the same path. Nil: transfer mode (``WorkerStorage/transfer``),
    /// each segment's source excerpt and result go over the coordinator's data endpoint.
    public var spool: URL?
    /// Transfer mode: the coordinator's data endpoint (one per coordinator, comma-separated, in the
    /// same order); nil: each coordinator's host, port 7452.
    public var dataEndpoint: String?
    /// Transfer mode: where excerpts and results are kept while a segment runs; emptied at start
    /// and exit. Nil: a private directory under the system's temporary directory, removed at exit.
    public var scratch: URL?
    /// Transfer mode: the bytes of excerpts (and the results that replace them) scratch may hold
    /// at once; an ASSIGN whose excerpt would not fit is refused (FAIL `scratch-full`, which
    /// spends no attempt). Nil: no limit but the disk's.
    public var scratchLimit: Int64?
    /// The worker's own CURVE key pair and the coordinator's public key (the coordinators' shared
    /// key when there are several); nil without CURVE (loopback or a trusted network only).
    public var curve: (keys: CurveKeyPair, serverKey: CurvePublicKey)?
    /// With several coordinators that do not share a key: each one's public key, in the order of
    /// ``coordinatorEndpoint``'s list (empty: ``curve``'s for all).
    public var coordinatorKeys: [CurvePublicKey] = []
    /// A join token (`splice workers join-token create`): presented once, before HELLO, so that
    /// the coordinator enrolls ``curve``'s key; nil when the key is enrolled by hand.
    public var joinToken: String?
    /// How often JOIN is sent again while no coordinator answers it (the first few asks come
    /// sooner: 100 ms, 200 ms… up to this).
    public var joinRetryInterval: Duration = .seconds(2)
    /// How long the connection to the coordinator of the session may stay lost before the worker
    /// looks for the active coordinator again.
    public var reconnectGrace: Duration = .milliseconds(500)
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
    /// The encoders it offers (its HELLO lists them): by default every one this FFmpeg has. A
    /// segment of a job that names another is refused as this worker's (`encoder-missing`).
    public var encoders: [String] = AvailableEncoders.names
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

    /// The coordinators' worker endpoints, in order.
    public var coordinatorEndpoints: [String] { Self.list(coordinatorEndpoint) }

    /// The data endpoints as used, one per coordinator: ``dataEndpoint``'s list, or each
    /// coordinator endpoint with port 7452.
    var effectiveDataEndpoints: [String] {
        if let dataEndpoint { return Self.list(dataEndpoint) }
        return coordinatorEndpoints.map { coordinator in
            guard let colon = coordinator.lastIndex(of: ":"),
                  coordinator[coordinator.index(after: colon)...].allSatisfy(\.isNumber) else {
                return coordinator + ":7452"
            }
            return coordinator[..<colon] + ":7452"
        }
    }

    /// The data endpoint of the first coordinator (for logs).
    var effectiveDataEndpoint: String { effectiveDataEndpoints.joined(separator: ",") }

    /// `a, b,c` → `["a", "b", "c"]`.
    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The DEALER's options towards coordinator `index`: `immediate` so sends fail visibly while
    /// cut off; with CURVE, that coordinator's key and a fixed routing id derived from the worker's
    /// key so a restarted worker takes over its route at once (ROUTER_HANDOVER); without keys,
    /// `connectionID`.
    func wireOptions(coordinator index: Int) -> WireOptions {
        let serverKey = index < coordinatorKeys.count ? coordinatorKeys[index] : curve?.serverKey
        var options = WireOptions.dealer(
            routingID: RoutingID(curve.map { "w:" + $0.keys.publicKey.z85 } ?? connectionID),
            curve: curve.flatMap { curve in serverKey.map { .client(keys: curve.keys, serverKey: $0) } } ?? .none,
            immediate: true
        )
        options.reconnectInterval = reconnectInterval
        options.reconnectIntervalMax = reconnectIntervalMax
        return options
    }
}
