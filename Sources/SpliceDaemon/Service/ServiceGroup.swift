

/// Runs services together: all start at once and run until ``shutdown()`` asks them to stop, last
/// first (a dispatcher stops before the store it uses).
///
/// A service that fails — throws, or returns while the group is neither shutting down nor
/// cancelled — makes the group shut the others down the same graceful way and wait for them;
/// `run()` then throws a ``ServiceGroupError`` naming that service and what it did. Cancelling
/// the task running the group cancels every service instead.
public actor ServiceGroup {
    private let services: [any Service]
    private var shuttingDown = false

    public init(services: [any Service]) {
        self.services = services
    }

    /// Runs every service until all have returned: after ``shutdown()`` or cancellation it
    /// returns; when a service failed first it throws, once the others have stopped.
    public func run() async throws(ServiceGroupError) {
        let firstFailure = await withTaskGroup(of: (index: Int, error: (any Error)?).self) { group in
            for (index, service) in services.enumerated() {
                group.addTask {
                    do {
                        try await service.run()
                        return (index, nil)
                    } catch {
                        return (index, error)
                    }
                }
            }
            var first: ServiceGroupError?
            var finished: Set<Int> = []
            while let ended = await group.next() {
                finished.insert(ended.index)
                guard first == nil else { continue }
                first = failure(of: services[ended.index], endingWith: ended.error)
                if first != nil && !Task.isCancelled { await stop(skipping: finished) }
            }
            return first
        }
        if let firstFailure { throw firstFailure }
    }

    /// Graceful shutdown, last service first; returns once each has been asked and has answered.
    /// Once the group is shutting down (asked, or after a failure) a second call does nothing.
    public func shutdown() async {
        await stop(skipping: [])
    }

    /// What it means that `service` ended with `error` (nil: it returned) at this moment.
    private func failure(of service: any Service, endingWith error: (any Error)?) -> ServiceGroupError? {
        if let error {
            // A group run as a service has already named the service that failed inside it.
            return error as? ServiceGroupError ?? ServiceGroupError(service: service.name, reason: .threw(error))
        }
        return shuttingDown || Task.isCancelled ? nil : ServiceGroupError(service: service.name, reason: .returnedEarly)
    }

    /// Shuts down, last first, every service but the `finished` ones (by index).
    private func stop(skipping finished: Set<Int>) async {
        guard !shuttingDown else { return }
        shuttingDown = true
        for (index, service) in services.enumerated().reversed() where !finished.contains(index) {
            await service.shutdown()
        }
    }
}
