internal import Foundation
internal import SpliceConcurrency

/// The ZAP handler (ZeroMQ RFC 27) of a context: libzmq asks it, during every CURVE handshake
/// on a server socket of the same context, whether to admit the client's public key.
///
/// It binds a ROUTER at `inproc://zeromq.zap.01` on its own socket thread and answers each
/// request from an async task, so a slow `Authorizer` (a database lookup) delays only that
/// handshake. It fails closed: an unknown domain, a mechanism other than CURVE, an authorizer
/// that does not answer within `decisionTimeout`, or a malformed request all refuse the client.
/// An admitted client's Z85 public key becomes the session's "User-Id", which every message
/// received on that session carries (`WirePeer.publicKey`).
///
/// Start it before binding CURVE server endpoints in the same context (they refuse to open
/// without it), and close it after them.
public final class ZAPHandler: Sendable {
    /// The in-process endpoint libzmq sends ZAP requests to.
    public static let zapEndpoint = "inproc://zeromq.zap.01"
    /// What the User-Id of a session admitted on probation starts with (then its Z85 key).
    static let probationPrefix = "probation:"

    /// How many handshakes were admitted, refused, or refused because the authorizer failed.
    public struct Statistics: Sendable, Hashable {
        public var allowed = 0
        public var denied = 0
        public var timedOut = 0
        public var malformed = 0
    }

    /// Called after each decision, for logging (`worker key refused key=… address=…`).
    public typealias Observer = @Sendable (AuthorizationRequest, AuthorizationDecision) -> Void

    private let context: WireContext
    private let endpoint: WireEndpoint
    private let domains: [String]
    private let server: Task<Void, Never>
    private let stats: Locked<Statistics>

    /// Starts a handler whose `authorizers` decide, per ZAP domain, which keys are admitted.
    /// Fails with `.addressInUse` if the context already has a ZAP handler.
    public static func start(
        context: WireContext, authorizers: [String: any Authorizer], decisionTimeout: Duration = .seconds(5),
        observer: Observer? = nil
    ) async throws(WireError) -> ZAPHandler {
        var options = WireOptions()
        options.linger = .zero
        options.heartbeat = nil
        options.monitorEvents = false
        options.maxMessageBytes = 64 << 10
        let endpoint: WireEndpoint
        do {
            endpoint = try await WireEndpoint.bind([zapEndpoint], type: .router, context: context, options: options)
        } catch where error.code == .addressInUse {
            throw WireError(.addressInUse, "a ZAP handler already runs in this context", errno: error.errno)
        }
        context.registerZAPDomains(authorizers)
        return ZAPHandler(
            context: context, endpoint: endpoint, authorizers: authorizers, timeout: decisionTimeout, observer: observer
        )
    }

    /// Starts a handler for one domain.
    public static func start(
        context: WireContext, domain: String = "splice", authorizer: any Authorizer,
        decisionTimeout: Duration = .seconds(5), observer: Observer? = nil
    ) async throws(WireError) -> ZAPHandler {
        try await start(
            context: context, authorizers: [domain: authorizer], decisionTimeout: decisionTimeout, observer: observer
        )
    }

    private init(
        context: WireContext, endpoint: WireEndpoint, authorizers: [String: any Authorizer], timeout: Duration,
        observer: Observer?
    ) {
        self.context = context
        self.endpoint = endpoint
        self.domains = Array(authorizers.keys)
        let stats = Locked(Statistics())
        self.stats = stats
        server = Task {
            await withDiscardingTaskGroup { group in
                while let request = await endpoint.receive() {
                    group.addTask {
                        let (reply, outcome) = await Self.answer(request.frames, authorizers, timeout, observer)
                        stats.withLock { outcome.count(into: &$0) }
                        if let reply { try? await endpoint.send(reply, to: request.peer) }
                    }
                }
            }
        }
    }

    /// The decisions so far.
    public var statistics: Statistics { stats.withLock { $0 } }

    /// Stops answering: the domains are unregistered (new CURVE server endpoints refuse to open)
    /// and, with ZAP_ENFORCE_DOMAIN, handshakes on existing ones fail from now on.
    public func close() async {
        context.unregisterZAPDomains(domains)
        await endpoint.close()
        await server.value
    }

    // MARK: - Answering one request

    private enum Outcome {
        case allowed, denied, timedOut, malformed

        func count(into statistics: inout Statistics) {
            switch self {
            case .allowed: statistics.allowed += 1
            case .denied: statistics.denied += 1
            case .timedOut: statistics.timedOut += 1
            case .malformed: statistics.malformed += 1
            }
        }
    }

    /// Builds the reply to one request. A request is
    /// `["", "1.0", request id, domain, address, identity, mechanism, credentials…]`; the reply is
    /// `["", "1.0", request id, status code, status text, user id, metadata]`.
    private static func answer(
        _ frames: [Data], _ authorizers: [String: any Authorizer], _ timeout: Duration, _ observer: Observer?
    ) async -> ([Data]?, Outcome) {
        guard frames.count >= 7, frames[0].isEmpty else { return (nil, .malformed) }
        func reply(_ status: String, _ text: String, userID: String = "") -> [Data] {
            [Data(), Data("1.0".utf8), frames[2], Data(status.utf8), Data(text.utf8), Data(userID.utf8), Data()]
        }
        let text = { (index: Int) in String(decoding: frames[index], as: UTF8.self) }
        guard text(1) == "1.0" else { return (reply("500", "unsupported ZAP version"), .malformed) }
        guard let authorizer = authorizers[text(3)] else {
            return (reply("400", "unknown ZAP domain"), .denied)
        }
        guard text(6) == "CURVE", frames.count == 8, let key = try? CurvePublicKey(bytes: frames[7]) else {
            return (reply("400", "CURVE credentials required"), .denied)
        }
        let request = AuthorizationRequest(domain: text(3), address: text(4), publicKey: key)
        guard let decision = await decide(request, authorizer, timeout) else {
            observer?(request, .deny(reason: "authorizer timed out"))
            return (reply("500", "authorizer did not answer in time"), .timedOut)
        }
        observer?(request, decision)
        switch decision {
        case .allow:
            return (reply("200", "OK", userID: key.z85), .allowed)
        case .probation:
            return (reply("200", "OK", userID: probationPrefix + key.z85), .allowed)
        case .deny(let reason):
            return (reply("400", reason), .denied)
        }
    }

    /// The authorizer's decision, or nil when it takes longer than `timeout`.
    private static func decide(
        _ request: AuthorizationRequest, _ authorizer: any Authorizer, _ timeout: Duration
    ) async -> AuthorizationDecision? {
        await withDeadline(timeout) { await authorizer.authorize(request) }
    }
}
