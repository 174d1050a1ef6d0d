import Foundation
import SpliceConcurrency
import SpliceWire
import Testing

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
