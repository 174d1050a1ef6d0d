import Foundation
import SpliceConcurrency
import SpliceStore
import Synchronization

/// The database as the operators' endpoint reads it: its own small connection pool (so scrapes
/// never wait behind the coordinator's work, and the coordinator's work never waits behind
/// scrapes), no retries, a server-side statement timeout, and answers that are shared and bounded
/// in time: concurrent scrapes share one query, a result is reused for a second, and a caller
/// gets nil after its timeout while the query goes on in the background (one at a time), so a
/// scrape during a database outage still answers at once.
final class OperationsStore: Sendable {
    let repository: JobRepository
    let overview: SharedRead<JobRepository.Overview>
    let jobs: SharedRead<[JobRepository.JobSummary]>

    init(database: ConnectionConfiguration) {
        let client = PostgresClient(configuration: database.forOperations(statementTimeout: .seconds(3)),
                                    maxConnections: 2, retryPolicy: .never)
        let repository = JobRepository(client: client)
        self.repository = repository
        overview = SharedRead(maxAge: .seconds(1)) { try await repository.overview() }
        jobs = SharedRead(maxAge: .seconds(1)) { try await repository.jobSummaries() }
    }

    func close() async {
        await repository.client.close()
    }
}

/// A read several callers share: at most one in flight, its result reused while younger than
/// `maxAge`, each caller waiting at most its own timeout.
final class SharedRead<Value: Sendable>: Sendable {
    /// What the latest completed read gave.
    enum Outcome: Sendable {
        case value(Value)
        case failed(String)
    }

    private struct State {
        var inFlight: Task<Outcome, Never>?
        var latest: (outcome: Outcome, at: ContinuousClock.Instant)?
    }

    private let read: @Sendable () async throws -> Value
    private let maxAge: Duration
    private let state = Mutex(State())

    init(maxAge: Duration, read: @escaping @Sendable () async throws -> Value) {
        self.maxAge = maxAge
        self.read = read
    }

    /// A fresh outcome, or nil when none arrived within `timeout` (the read goes on).
    func outcome(within timeout: Duration) async -> Outcome? {
        let now = ContinuousClock.now
        let task = state.withLock { state -> Task<Outcome, Never>? in
            if let latest = state.latest, now - latest.at < maxAge { return nil }
            if let inFlight = state.inFlight { return inFlight }
            let read = self.read
            let task = Task { () -> Outcome in
                let outcome: Outcome
                do {
                    outcome = .value(try await read())
                } catch {
                    outcome = .failed(String(describing: error))
                }
                self.finished(outcome)
                return outcome
            }
            state.inFlight = task
            return task
        }
        guard let task else { return state.withLock { $0.latest?.outcome } }
        return await SpliceConcurrency.value(of: task, within: timeout)
    }

    /// The value, or nil when the read failed or took longer than `timeout`.
    func value(within timeout: Duration) async -> Value? {
        if case .value(let value) = await outcome(within: timeout) { return value }
        return nil
    }

    private func finished(_ outcome: Outcome) {
        state.withLock { state in
            state.inFlight = nil
            state.latest = (outcome, .now)
        }
    }
}
