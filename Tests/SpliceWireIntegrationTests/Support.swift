import CZeroMQShims
import CZeroMQ
import Foundation
import SpliceConcurrency
import SpliceWire
import Testing

@testable import SpliceWire

/// Loopback with a port the kernel picks.
let anyLoopbackPort = "tcp://127.0.0.1:*"

/// The value `operation` produces, or nil when it takes longer than `timeout` (the operation is
/// then cancelled). Keeps every receive in these tests bounded.
func within<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async -> T?) async -> T? {
    await withDeadline(timeout, operation)
}

/// Closes `endpoints` without lingering, then terminates `context`.
func shutDown(_ context: WireContext, _ endpoints: WireEndpoint...) async {
    for endpoint in endpoints { await endpoint.close(linger: .zero) }
    await context.terminate()
}

/// The `WireError` that `body` throws; nil (and a recorded issue for any other error) otherwise.
func wireError(_ body: () async throws -> Void) async -> WireError? {
    do {
        try await body()
    } catch let error as WireError {
        return error
    } catch {
        Issue.record("expected a WireError, got \(error)")
    }
    return nil
}

/// The next message on `endpoint`, or nil after `timeout`.
func receive(_ endpoint: WireEndpoint, within timeout: Duration = .seconds(30)) async -> WireDelivery? {
    await within(timeout) { await endpoint.receive() }
}

/// Waits until `condition` holds, checking every 10 ms; false after `timeout`.
func eventually(within timeout: Duration = .seconds(30), _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

/// The first event on `endpoint` matching `predicate`, or nil after `timeout`.
func firstEvent(
    on endpoint: WireEndpoint, within timeout: Duration = .seconds(30),
    where predicate: @escaping @Sendable (WireEvent.Kind) -> Bool
) async -> WireEvent? {
    await within(timeout) {
        for await event in endpoint.events where predicate(event.kind) { return event }
        return nil
    }
}

extension Data {
    init(text: String) { self.init(text.utf8) }
}

extension WireDelivery {
    var texts: [String] { frames.map { String(decoding: $0, as: UTF8.self) } }
}

/// An `Authorizer` from a closure, for tests that decide per handshake (a slow one, a refusal). Live sessions are not
/// re-checked unless `stillAuthorized` is given.
struct ClosureAuthorizer: Authorizer {
    private let decide: @Sendable (AuthorizationRequest) async -> AuthorizationDecision
    private let stillAuthorized: (@Sendable (CurvePublicKey, String) -> Bool)?

    init(
        stillAuthorized: (@Sendable (CurvePublicKey, String) -> Bool)? = nil,
        _ decide: @escaping @Sendable (AuthorizationRequest) async -> AuthorizationDecision
    ) {
        self.decide = decide
        self.stillAuthorized = stillAuthorized
    }

    func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision {
        await decide(request)
    }

    func isStillAuthorized(_ key: CurvePublicKey, domain: String) -> Bool {
        stillAuthorized?(key, domain) ?? true
    }
}

/// The integer options libzmq reports for a socket of `type` given `options` by the very function
/// that configures every endpoint's socket (`EndpointLoop.configure`), read back on a socket of the
/// test's own: the endpoint's socket belongs to its thread and is not read from outside.
func appliedOptions(_ options: WireOptions, type: WireSocketType) async throws -> [String: Int64] {
    let context = try WireContext()
    var values: [String: Int64] = [:]
    do {
        let socket = try RawSocket(context: context, type: type == .router ? ZMQ_ROUTER : ZMQ_DEALER)
        try EndpointLoop.configure(socket, options, type: type)
        let names: [(String, Int32)] = [
            ("linger", ZMQ_LINGER), ("sndhwm", ZMQ_SNDHWM), ("rcvhwm", ZMQ_RCVHWM),
            ("heartbeat_ivl", ZMQ_HEARTBEAT_IVL), ("heartbeat_timeout", ZMQ_HEARTBEAT_TIMEOUT),
            ("heartbeat_ttl", ZMQ_HEARTBEAT_TTL), ("immediate", ZMQ_IMMEDIATE),
            ("reconnect_ivl", ZMQ_RECONNECT_IVL), ("reconnect_ivl_max", ZMQ_RECONNECT_IVL_MAX),
            ("curve_server", ZMQ_CURVE_SERVER), ("zap_enforce_domain", Int32(splice_ZMQ_ZAP_ENFORCE_DOMAIN())),
        ]
        for (name, option) in names {
            if let value = try? socket.get(option, as: Int32.self, name: name) { values[name] = Int64(value) }
        }
        values["maxmsgsize"] = try socket.get(ZMQ_MAXMSGSIZE, as: Int64.self, name: "ZMQ_MAXMSGSIZE")
    }
    await context.terminate()
    return values
}
