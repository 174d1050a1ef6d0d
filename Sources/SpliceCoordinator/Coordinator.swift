public import SpliceHTTP
public import SpliceWire
import Synchronization
public import SpliceDaemon

/// The coordinator service: owns the jobs in Postgres, plans them, leases their segments to
/// worker daemons over ZeroMQ, reaps what workers abandon, stitches what they finish, and
/// answers the client API. See docs/coordinator.md.
///
///     let coordinator = Coordinator(configuration: configuration)
///     let running = Task { try await coordinator.run() }
///     let endpoints = try await coordinator.ready()     // bound; "coordinator ready" logged
///     …
///     await coordinator.shutdown()                       // graceful: drains, then run() returns
///     try await running.value
///
/// Cancelling the task that runs `run()` stops it abruptly instead (nothing drained, endpoints
/// closed without linger) — what a crash looks like to the workers, short of kill -9. Either
/// way, a new coordinator on the same database continues every job.
public final class Coordinator: Service {
    public let configuration: CoordinatorConfiguration
    public var name: String { "coordinator" }

    private enum Phase {
        case idle
        case starting
        case running(CoordinatorRuntime)
        case finished((any Error)?)
    }

    private struct State {
        var phase = Phase.idle
        var shutdownRequested = false
        var readyWaiters: [CheckedContinuation<CoordinatorEndpoints, any Error>] = []
        /// The leadership has made its first decision (active, or standing by): `ready()` answers.
        var decided = false
        /// Where the operators' endpoint listens, once it does.
        var metrics: HTTPAddress?

        func endpoints(of runtime: CoordinatorRuntime) -> CoordinatorEndpoints {
            var endpoints = runtime.endpoints
            endpoints.metrics = metrics
            return endpoints
        }
    }

    private let state = Mutex(State())

    public init(configuration: CoordinatorConfiguration) {
        self.configuration = configuration
    }

    /// Starts the database, binds both endpoints and runs until `shutdown()` has drained
    /// everything (or the task is cancelled). Throws when starting fails: an endpoint in use, a
    /// non-loopback bind without keys, an unreachable or newer database; and throws the
    /// ``ServiceGroupError`` of one of its services that fails, once the others have drained.
    public func run() async throws {
        let mayStart = state.withLock { state -> Bool in
            guard case .idle = state.phase else { return false }
            state.phase = .starting
            return true
        }
        guard mayStart else {
            throw CoordinatorError(.invalidConfiguration, "this coordinator has already been started")
        }
        // The operators' endpoint first: /healthz answers while the database starts and migrates.
        // (A configuration that cannot work is refused before anything listens.)
        let operations: HTTPServer?
        do {
            try configuration.validate()
            operations = try startOperations()
        } catch {
            finish(with: error)
            throw error
        }
        let runtime: CoordinatorRuntime
        do {
            runtime = try await CoordinatorRuntime.start(configuration)
        } catch {
            await operations?.close()
            finish(with: error)
            throw error
        }
        let stopAtOnce = state.withLock { state in
            state.phase = .running(runtime)
            return state.shutdownRequested
        }
        if stopAtOnce { Task { await runtime.shutdown() } }
        // Ready once the leadership has decided: a coordinator alone on its database is active then.
        let announce = Task {
            await runtime.decided()
            guard !Task.isCancelled else { return }
            let (waiters, endpoints) = self.state.withLock { state in
                state.decided = true
                defer { state.readyWaiters.removeAll() }
                return (state.readyWaiters, state.endpoints(of: runtime))
            }
            for waiter in waiters { waiter.resume(returning: endpoints) }
        }
        do {
            try await runtime.run()
        } catch {
            announce.cancel()
            await operations?.close()
            finish(with: error)
            throw error
        }
        announce.cancel()
        await operations?.close()
        finish(with: nil)
    }

    /// Starts the operators' endpoint when one is configured (docs/deploy.md, Operating a cluster).
    private func startOperations() throws -> HTTPServer? {
        guard let address = configuration.metricsEndpoint else { return nil }
        let site = CoordinatorSite(version: configuration.version) { [weak self] in self?.sitePhase() ?? .stopped }
        let server: HTTPServer
        do {
            server = try OperationsServer.start(on: address, site: site, logger: configuration.logger)
        } catch {
            throw CoordinatorError(.invalidConfiguration, "the operations endpoint (--metrics-endpoint) cannot start: \(error)")
        }
        state.withLock { $0.metrics = server.address }
        return server
    }

    /// The coordinator's phase as the operators' endpoint reports it.
    private func sitePhase() -> CoordinatorSite.Phase {
        state.withLock { state in
            switch state.phase {
            case .idle, .starting: .starting
            case .running(let runtime): state.shutdownRequested ? .stopping(runtime) : .running(runtime)
            case .finished: .stopped
            }
        }
    }

    /// Graceful shutdown: stop accepting, finish in-flight commits (and acknowledge them), tell
    /// the workers, close the endpoints with linger; `run()` then returns.
    public func shutdown() async {
        let runtime = state.withLock { state -> CoordinatorRuntime? in
            state.shutdownRequested = true
            if case .running(let runtime) = state.phase { return runtime }
            return nil
        }
        await runtime?.shutdown()
    }

    /// Waits until both endpoints are bound and returns where they are. Throws if the
    /// coordinator fails to start or has stopped.
    public func ready() async throws -> CoordinatorEndpoints {
        try await withCheckedThrowingContinuation { continuation in
            let answer = state.withLock { state -> Result<CoordinatorEndpoints, any Error>? in
                switch state.phase {
                case .running(let runtime) where state.decided:
                    return .success(state.endpoints(of: runtime))
                case .finished(let error):
                    return .failure(error ?? CoordinatorError(.notRunning, "the coordinator has stopped"))
                case .idle, .starting, .running:
                    state.readyWaiters.append(continuation)
                    return nil
                }
            }
            if let answer { continuation.resume(with: answer) }
        }
    }

    /// Message counters of the worker and API endpoints (received, delivered, dropped by
    /// reason), while running.
    public var counters: (workers: WireCounters.Snapshot, api: WireCounters.Snapshot)? {
        state.withLock { state in
            guard case .running(let runtime) = state.phase else { return nil }
            return (runtime.workerEndpoint.counters.snapshot(), runtime.apiEndpoint.counters.snapshot())
        }
    }

    /// The worker sessions, while running.
    public func sessions() async -> [WorkerSessionSnapshot] {
        let runtime = state.withLock { state -> CoordinatorRuntime? in
            if case .running(let runtime) = state.phase { return runtime }
            return nil
        }
        return await runtime?.role.term?.shell.sessions ?? []
    }

    /// Whether this coordinator is the active one now (docs/coordinator.md, Standby coordinators),
    /// and the epoch it holds — or, while it stands by, the active one's as last read.
    public var leadership: (active: Bool, epoch: Int64)? {
        state.withLock { state in
            guard case .running(let runtime) = state.phase else { return nil }
            return (runtime.role.term != nil, runtime.role.epoch)
        }
    }

    private func finish(with error: (any Error)?) {
        let waiters = state.withLock { state in
            state.phase = .finished(error)
            defer { state.readyWaiters.removeAll() }
            return state.readyWaiters
        }
        let failure = error ?? CoordinatorError(.notRunning, "the coordinator stopped before it was ready")
        for waiter in waiters { waiter.resume(throwing: failure) }
    }
}

/// Where a running coordinator listens.
public struct CoordinatorEndpoints: Sendable, Hashable {
    /// The worker endpoint as bound (`tcp://127.0.0.1:*` resolved to its port).
    public var workers: String
    /// The API endpoint as bound.
    public var api: String
    /// The data endpoint as bound, when there is one.
    public var data: String? = nil
    /// The coordinator's CURVE public key (what workers and clients need), when CURVE is on.
    public var serverKey: CurvePublicKey?
    /// The operators' endpoint as bound (`/metrics`, `/healthz`, `/readyz`, the status page), if any.
    public var metrics: HTTPAddress?
    /// The HTTP API as bound (`--http-endpoint`), if it runs.
    public var http: HTTPAddress? = nil
}
