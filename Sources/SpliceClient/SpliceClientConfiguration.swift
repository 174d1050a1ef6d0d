public import SpliceConcurrency
public import SpliceWire

/// How a `SpliceClient` reaches the coordinator's API endpoint and how patient it is.
public struct SpliceClientConfiguration: Sendable {
    /// How the connection is protected.
    public enum Security: Sendable, Hashable {
        /// No CURVE: for a coordinator whose API listens on loopback (or runs with `--insecure`).
        case none
        /// CURVE with this client's key pair, trusting the coordinator's public key. The
        /// coordinator admits the client key when it is in its `--admin-keys` (or is its own).
        case curve(clientKeys: CurveKeyPair, serverKey: CurvePublicKey)
    }

    /// The API endpoint, e.g. `tcp://127.0.0.1:7451` — or several coordinators' API endpoints,
    /// comma-separated (`tcp://a:7451,tcp://b:7451`): a call goes to the first that answers, a
    /// standby's `not-active` answer sends it to the active coordinator it names, and a silent one
    /// to the next in the list (docs/coordinator.md, Standby coordinators).
    public var endpoint: String
    public var security: Security
    /// With `.curve` and several coordinators that do not share a key: each one's public key, in
    /// the order of ``endpoint``'s list (empty: the security's key for every one).
    public var serverKeys: [CurvePublicKey] = []
    /// How long one call may take in all, resends included, before it fails as `.unreachable`.
    public var timeout: Duration
    /// How long to wait for the reply to one send before sending the request again. A reply to
    /// an earlier send of the same call is still accepted, so a short value costs only duplicates,
    /// which the coordinator answers the same way (every request is safe to repeat).
    public var attemptTimeout: Duration
    /// The pause before resending after a retryable `ERROR` (e.g. the job store is restarting).
    public var retryBackoff: Backoff
    /// The pause before reconnecting while `waitForCompletion` cannot reach the coordinator.
    public var reconnectBackoff: Backoff

    public init(
        endpoint: String = "tcp://127.0.0.1:7451", security: Security = .none, timeout: Duration = .seconds(10),
        attemptTimeout: Duration = .seconds(3),
        retryBackoff: Backoff = Backoff(base: .milliseconds(200), cap: .seconds(2)),
        reconnectBackoff: Backoff = Backoff(base: .milliseconds(500), cap: .seconds(5))
    ) {
        self.endpoint = endpoint
        self.security = security
        self.timeout = timeout
        self.attemptTimeout = attemptTimeout
        self.retryBackoff = retryBackoff
        self.reconnectBackoff = reconnectBackoff
    }

    /// The coordinators' API endpoints, in order.
    public var endpoints: [String] {
        endpoint.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The socket options of the client's DEALER to `address`: requests queue until the connection
    /// is up (`immediate` off), so the timeout, not the connection state, decides when to give up.
    func socketOptions(for address: String) -> WireOptions {
        switch security {
        case .none:
            return .dealer(immediate: false)
        case .curve(let clientKeys, let serverKey):
            let index = endpoints.firstIndex(of: address)
            let key = index.flatMap { $0 < serverKeys.count ? serverKeys[$0] : nil } ?? serverKey
            return .dealer(curve: .client(keys: clientKeys, serverKey: key), immediate: false)
        }
    }
}
