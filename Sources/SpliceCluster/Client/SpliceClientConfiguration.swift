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

    /// The API endpoint, e.g. `tcp://127.0.0.1:7451`.
    public var endpoint: String
    public var security: Security
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

    /// The socket options of the client's DEALER: requests queue until the connection is up
    /// (`immediate` off), so the timeout, not the connection state, decides when to give up.
    var socketOptions: WireOptions {
        switch security {
        case .none:
            return .dealer(immediate: false)
        case .curve(let clientKeys, let serverKey):
            return .dealer(curve: .client(keys: clientKeys, serverKey: serverKey), immediate: false)
        }
    }
}
