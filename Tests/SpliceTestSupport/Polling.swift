/// Polls `condition` every 20 ms until it holds; false after `timeout` (it is asked once more at
/// the deadline). The one polling primitive of the integration tests.
public func eventually(
    within timeout: Duration = .seconds(30), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Runs `body`, then `cleanup` — also when `body` throws (a failed `#require`, a cancelled test).
public func withCleanup<T>(_ cleanup: () async -> Void, _ body: () async throws -> T) async rethrows -> T {
    do {
        let value = try await body()
        await cleanup()
        return value
    } catch {
        await cleanup()
        throw error
    }
}

/// A failure inside a test helper, with what was expected.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    /// A failure saying `description`.
    public init(_ description: String) { self.description = description }
}

/// Loopback with a port the kernel picks.
public let loopback = "tcp://127.0.0.1:*"
