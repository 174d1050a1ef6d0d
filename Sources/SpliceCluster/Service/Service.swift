/// A long-running part of a daemon (the coordinator's dispatcher, its reaper, a worker's
/// session), in the shape of swift-service-lifecycle: `run()` does the work until it is told to
/// stop. Graceful shutdown is not cancellation: ``shutdown()`` asks the service to finish what
/// it is doing (drain) and return; task cancellation means stop now.
public protocol Service: Sendable {
    /// A name for logs.
    var name: String { get }
    /// Runs until the work is done, ``shutdown()`` is called, or the task is cancelled.
    func run() async throws
    /// Asks the service to finish gracefully; `run()` returns when it has.
    func shutdown() async
}

/// Runs services together: all start at once; when one fails the others are cancelled and the
/// error is rethrown; ``shutdown()`` asks them to stop in reverse order of the list.
public actor ServiceGroup {
    private let services: [any Service]
    private var shuttingDown = false

    public init(services: [any Service]) {
        self.services = services
    }

    /// Runs every service until all have returned (or one throws).
    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in services {
                group.addTask { try await service.run() }
            }
            do {
                for try await _ in group {}
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// Graceful shutdown, last service first (a dispatcher stops before the store it uses).
    public func shutdown() async {
        guard !shuttingDown else { return }
        shuttingDown = true
        for service in services.reversed() {
            await service.shutdown()
        }
    }
}
