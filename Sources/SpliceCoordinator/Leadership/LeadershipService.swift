import Foundation
import SpliceConcurrency
import SpliceLog
import SpliceStore
import SpliceWire
import SpliceDaemon
import Synchronization

/// Keeps this coordinator's leadership (docs/coordinator.md, Standby coordinators): while it stands
/// by it reads the leadership row every poll and takes the lease over once it has run out; while
/// it is active it renews the lease, and stands down when it cannot — before the lease can run
/// out, as its own clock measures — or when it finds another coordinator took over.
///
/// Taking over: the epoch is raised by one (`LeaderLease.acquire`), the fence waits out every
/// write of the earlier epoch (`LeaderLease.fence`), and only then does a ``CoordinatorTerm`` start
/// under the new epoch; the standby desk then tells the workers it knows ACTIVE.
///
/// Every call to the database runs on a connection of its own and is abandoned — never waited on
/// — when it does not answer in time: a database that has gone silent must not keep the active
/// coordinator from standing down when its lease runs out.
final class LeadershipService: Service {
    let name = "leadership"

    private let context: TermContext
    private let lease: LeaderLease
    private let policy: LeadershipPolicy
    private let role: CoordinatorRole
    /// The embedded database serves one coordinator: it takes the lease whoever held it, and a
    /// coordinator deposed there stops instead of standing by.
    private let embedded: Bool
    private let connectionConfiguration: ConnectionConfiguration
    private let clock: LeaseClock
    private let logger: Logger
    private let wake = WakeSignal()
    private let stopping = Latch()
    private let stopped = Latch()
    /// Opened after the first try to become active (whatever it found): `ready()` waits for it.
    let decided = Latch()
    private let connection = Mutex<PostgresConnection?>(nil)
    private let failureLog = LogThrottle(interval: .seconds(5))

    init(context: TermContext, candidate: LeaderLease.Candidate, embedded: Bool, role: CoordinatorRole) {
        self.context = context
        self.policy = context.configuration.leadership
        self.lease = LeaderLease(candidate: candidate, duration: policy.lease)
        self.role = role
        self.embedded = embedded
        self.logger = context.logger
        self.clock = LeaseClock(margin: policy.stepDownMargin)
        var database = context.database.setting("application_name", "splice-leadership")
        for (keyword, value) in [("connect_timeout", "2"), ("keepalives_idle", "5"), ("keepalives_interval", "2"),
                                 ("keepalives_count", "3"),
                                 ("tcp_user_timeout", String(policy.lease.wholeMilliseconds))] {
            database = database.settingIfAbsent(keyword, value)
        }
        connectionConfiguration = database
    }

    func run() async throws {
        defer {
            decided.open()
            stopped.open()
        }
        // Cancelled (an abrupt stop, as close to kill -9 as a process gets): every wait returns at
        // once from then on, so the loops end instead of spinning, and a term is abandoned.
        while !stopping.isOpen && !Task.isCancelled {
            if let term = role.term {
                try await hold(term)
            } else {
                try await standBy()
            }
        }
        guard let term = role.term else { return }
        if Task.isCancelled {
            clock.lapse()
            role.ended(term)
            await term.abandon()
        } else {
            await endGracefully(term)
        }
    }

    func shutdown() async {
        stopping.open()
        wake.signal()
        await stopped.wait()
    }

    // MARK: - Standing by

    private func standBy() async throws {
        let started = ContinuousClock.now
        if let found = await call(within: policy.lease, { connection in try await self.lease.current(on: connection) }) {
            role.read(found)
            await role.desk.update(found)
            let mayTake = !found.isLive || found.holder == lease.candidate.instance || embedded
            if mayTake && !stopping.isOpen { try await takeOver() }
        } else {
            role.read(nil)
            await role.desk.update(nil)
        }
        decided.open()
        guard role.term == nil else { return }
        await wake.wait(upTo: max(.milliseconds(1), policy.standbyPoll - (ContinuousClock.now - started)))
    }

    /// Raises the epoch, fences off the earlier one, starts the term.
    private func takeOver() async throws {
        let sent = ContinuousClock.now
        guard let acquisition = await call(within: policy.lease, { connection in
            try await self.lease.acquire(force: self.embedded, on: connection)
        }) else { return }
        guard case .acquired(let epoch, let previousEpoch, let previousHolder, let lapsed) = acquisition else {
            if case .held(let record) = acquisition {
                role.read(record)
                await role.desk.update(record)
            }
            return
        }
        clock.renewed(sentAt: sent, lease: policy.lease)
        // Every write of the earlier epoch ends before this one writes anything.
        let terminated = await call(within: policy.lease * 4, { connection in
            try await self.lease.fence(epoch: epoch, on: connection, lockWait: self.policy.fenceLockWait)
        })
        guard let terminated else {
            logger.warning("take-over abandoned: the fence did not close in time", ["epoch": epoch])
            clock.lapse()
            return
        }
        let term = CoordinatorTerm(epoch: epoch, context: context, lease: clock)
        do {
            try await reloadKeys()
            try await term.start(previousEpoch: previousEpoch, previousHolder: previousHolder,
                                 name: context.configuration.name)
        } catch {
            logger.warning("take-over abandoned: the database refused the new term",
                           ["epoch": epoch, "error": "\(error)"])
            _ = await term.standDown(leader: nil)
            clock.lapse()
            return
        }
        role.began(term)
        role.read(LeaderLease.Record(
            epoch: epoch, holder: lease.candidate.instance, holderName: lease.candidate.name,
            apiEndpoint: lease.candidate.apiEndpoint, workersEndpoint: lease.candidate.workersEndpoint,
            metricsEndpoint: lease.candidate.metricsEndpoint, httpEndpoint: lease.candidate.httpEndpoint, acquiredAt: Date(), isLive: true, remaining: policy.lease))
        let told = await role.desk.announce(epoch: epoch)
        logger.info("coordinator active", [
            "epoch": epoch, "previous_epoch": previousEpoch, "previous": previousHolder ?? "-",
            "previous_lease": previousEpoch == 0 ? "none" : (lapsed ? "ran out" : "own or forced"),
            "fenced_sessions_terminated": terminated, "workers_told": told,
        ])
    }

    /// The worker keys the ZAP handler admits, as the store has them now (another coordinator may
    /// have enrolled or revoked some while this one stood by).
    private func reloadKeys() async throws {
        guard let keys = context.enrolledKeys else { return }
        let repository = JobRepository(client: PostgresClient(configuration: context.database.readOnly(
            applicationName: "splice-keys"), maxConnections: 1, retryPolicy: .never))
        defer { Task { await repository.client.close() } }
        for worker in try await repository.workers() {
            guard let key = try? CurvePublicKey(z85: worker.publicKey) else { continue }
            if worker.state == .revoked { keys.revoke(key) } else { keys.enroll(key) }
        }
    }

    // MARK: - Holding it

    private func hold(_ term: CoordinatorTerm) async throws {
        // Renewals every interval from the last one that succeeded (the acquisition counts); a
        // failed one is tried again a quarter interval later, until the deadline.
        var nextRenewal = (clock.lastRenewal ?? .now) + policy.renewInterval
        while !stopping.isOpen && !Task.isCancelled {
            guard let deadline = clock.deadline else {
                role.read(nil)  // its own record is stale now, and the database has not said who holds it
                await standDown(term, reason: "the lease lapsed")
                return
            }
            if term.failed.isOpen {
                let failure = term.failure
                await standDown(term, reason: "a service failed")
                await release(term.epoch)
                if let failure { throw failure }
                return
            }
            let now = ContinuousClock.now
            if now >= deadline {
                role.read(nil)
                await standDown(term, reason: "the lease could not be renewed in time")
                return
            }
            if now < nextRenewal {
                await wake.wait(upTo: min(nextRenewal, deadline) - now)
                continue
            }
            let sent = ContinuousClock.now
            let renewed = await call(within: deadline - sent, { connection in
                try await self.lease.renew(epoch: term.epoch, on: connection)
            })
            switch renewed {
            case true?:
                clock.renewed(sentAt: sent, lease: policy.lease)
                nextRenewal = sent + policy.renewInterval
            case false?:
                let current = await call(within: .seconds(1), { connection in try await self.lease.current(on: connection) })
                role.read(current)
                await role.desk.update(current)
                await standDown(term, reason: "another coordinator took over (epoch \(current?.epoch ?? term.epoch + 1))")
                if embedded {
                    throw CoordinatorError(
                        .invalidConfiguration, "another coordinator took over this coordinator's embedded database; "
                            + "an embedded PostgreSQL serves one coordinator: give every coordinator --database with "
                            + "an external PostgreSQL to run standbys")
                }
                return
            case nil:
                // The database did not answer: again soon, until the deadline.
                nextRenewal = ContinuousClock.now + min(.milliseconds(250), policy.renewInterval / 4)
            }
        }
    }

    private func standDown(_ term: CoordinatorTerm, reason: String) async {
        clock.lapse()
        role.ended(term)
        let peers = await term.standDown(leader: role.leader)
        await role.desk.remember(peers)
        logger.warning("coordinator standing by", ["epoch": term.epoch, "reason": reason, "workers_told": peers.count])
    }

    /// Shutting down while active: drain, tell the workers, give the lease up for a standby to
    /// take at once.
    private func endGracefully(_ term: CoordinatorTerm) async {
        await term.endGracefully()
        role.ended(term)
        await release(term.epoch)
        clock.lapse()
    }

    private func release(_ epoch: Int64) async {
        let released = await call(within: .seconds(2), { connection in
            try await self.lease.release(epoch: epoch, on: connection)
            return true
        })
        if released == nil {
            logger.warning("the lease was not released; a standby takes over when it runs out", ["epoch": epoch])
        } else {
            logger.info("leadership released", ["epoch": epoch])
        }
    }

    // MARK: - The connection

    /// `body` on the leadership connection (opened when there is none), or nil when it failed or
    /// did not answer within `timeout` — then the connection is dropped (a call that hangs is left
    /// behind, and the next one opens another connection).
    private func call<Value: Sendable>(
        within timeout: Duration, _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async -> Value? {
        let configuration = connectionConfiguration
        let existing = connection.withLock { $0 }
        let task = Task { () -> Result<(Value, PostgresConnection), any Error> in
            do {
                let open = if let existing { existing } else { try await PostgresConnection.connect(configuration) }
                return .success((try await body(open), open))
            } catch {
                return .failure(error)
            }
        }
        guard let outcome = await SpliceConcurrency.value(of: task, within: max(.milliseconds(1), timeout)) else {
            connection.withLock { $0 = nil }
            if let suppressed = failureLog.admit("timeout") {
                logger.warning("the database did not answer the leadership in time",
                               ["waited": timeout, "suppressed": suppressed])
            }
            return nil
        }
        switch outcome {
        case .success(let (value, open)):
            connection.withLock { $0 = open }
            return value
        case .failure(let error):
            if let error = error as? StoreError, error.code == .queryFailed || error.code == .fenced {
                // The connection is fine; the statement was refused.
            } else {
                connection.withLock { $0 = nil }
            }
            if let suppressed = failureLog.admit("failed") {
                logger.warning("leadership query failed", ["error": "\(error)", "suppressed": suppressed])
            }
            return nil
        }
    }
}

extension ConnectionConfiguration {
    /// The same settings with `keyword` set unless it is set already.
    fileprivate func settingIfAbsent(_ keyword: String, _ value: String) -> ConnectionConfiguration {
        has(keyword) ? self : setting(keyword, value)
    }
}
