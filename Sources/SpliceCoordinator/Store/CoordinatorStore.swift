import Foundation
import SpliceCore
import SpliceJSON
import SpliceMedia
import SpliceStore
import SpliceWire
import SpliceDaemon

/// The coordinator's use of the job store: it turns claimed segments into ASSIGN payloads and
/// store answers into state machine outcomes. A wire attempt names its lease exactly as the store
/// does (job, segment index, token), so nothing is looked up to fence a write. Every write is the
/// repository's fenced, retry-safe transaction; the plan cache only spares queries (a job's plan
/// never changes once recorded).
final class CoordinatorStore: Sendable {
    /// What registering a worker found.
    enum Registration: Sendable, Equatable {
        case registered(UUID)
        case refused(String)
    }

    let repository: JobRepository
    let leaseDuration: Duration
    let spool: SpoolLayout
    /// Each job's plan, decoded once.
    private let plans = JobKeyedCache<PlannedJob>(limit: 128)
    /// Lease extensions are group-committed like completions: one statement for all that arrive
    /// while the previous one is being written.
    private let extensions: GroupCommitter<LeaseReference, Bool>

    init(repository: JobRepository, leaseDuration: Duration, spool: SpoolLayout) {
        self.repository = repository
        self.leaseDuration = leaseDuration
        self.spool = spool
        extensions = GroupCommitter(maxBatch: 512) { references in
            let extended = try await repository.extendLeases(Array(Set(references)), by: leaseDuration)
            return references.map { extended[$0] != nil }
        }
    }

    // MARK: - Workers

    /// Finds the worker's row — a CURVE key must be enrolled and not revoked; an unauthenticated
    /// connection is enrolled on the spot — records its name, slots and encoders, and marks it online.
    func register(_ identity: WorkerIdentity, name: String, slots: Int, encoders: [String]) async throws -> Registration {
        if case .key = identity {
            guard let existing = try await repository.worker(publicKey: identity.storeKey) else {
                return .refused("key not enrolled")
            }
            guard existing.state != .revoked else { return .refused("key revoked") }
        }
        let worker: Worker
        do {
            worker = try await repository.enrollWorker(
                publicKey: identity.storeKey, name: name, slots: slots,
                capabilities: try PostgresJSON(encoding: ["encoders": encoders]))
        } catch let error as StoreError where error.code == .workerRevoked {
            return .refused("key revoked")
        }
        _ = try await repository.workerSeen(id: worker.id, state: .online)
        return .registered(worker.id)
    }

    /// Records workers as heard from now, or gone.
    func markWorkers(_ ids: [UUID], online: Bool) async throws {
        for id in ids { _ = try await repository.workerSeen(id: id, state: online ? .online : .offline) }
    }

    // MARK: - Results and leases

    /// Commits a COMPLETE or FAIL, fenced on its token.
    func commit(_ result: WorkerResult) async throws -> ResultOutcome {
        let reference = result.attempt.lease
        switch result {
        case .complete(let complete):
            return try await repository.completeSegment(
                reference, outputPath: complete.outputPath, checksum: complete.checksum, figures: complete.figures)
        case .fail(let fail) where fail.blame != .segment:
            // Not the segment's fault: back at once, no attempt spent (docs/coordinator.md, Refusals).
            return try await repository.returnSegment(reference, reason: "refused by worker: \(fail.code): \(fail.reason)")
        case .fail(let fail):
            let failure = SegmentFailure(message: "\(fail.code): \(fail.reason)", isRetryable: fail.retryable)
            return try await repository.failSegment(reference, failure: failure)
        }
    }

    /// Extends the leases; returns the tokens that were current (and are now extended).
    func extend(_ attempts: [SegmentAttempt]) async throws -> Set<LeaseToken> {
        if attempts.count == 1, let attempt = attempts.first {  // ACCEPT and PROGRESS: no task group
            return try await extensions.submit(attempt.lease) ? [attempt.leaseToken] : []
        }
        return try await withThrowingTaskGroup(of: LeaseToken?.self) { group in
            for attempt in attempts {
                group.addTask {
                    try await self.extensions.submit(attempt.lease) ? attempt.leaseToken : nil
                }
            }
            var current: Set<LeaseToken> = []
            for try await token in group { if let token { current.insert(token) } }
            return current
        }
    }

    /// Ends an attempt that will never run: a failure when it `spendsAttempt` (one that ends the
    /// segment and its job at once unless `retryable`), else a hand-back.
    func abandon(_ attempt: SegmentAttempt, reason: String, spendsAttempt: Bool, retryable: Bool = true) async throws
        -> ResultOutcome
    {
        spendsAttempt
            ? try await repository.failSegment(attempt.lease, failure: SegmentFailure(message: reason, isRetryable: retryable))
            : try await repository.returnSegment(attempt.lease, reason: reason)
    }

    /// Takes back the leases of a worker that left.
    func releaseLeases(ofWorker workerID: UUID, reason: String) async throws -> TakenBack {
        TakenBack(try await repository.releaseLeases(ofWorker: workerID, reason: reason))
    }

    /// Takes back expired leases.
    func reapExpiredLeases() async throws -> TakenBack {
        TakenBack(try await repository.reapExpiredLeases())
    }

    /// Takes back leases no session holds (`held`) that nobody extended for `idle`.
    func releaseOrphanedLeases(held: Set<LeaseToken>, idle: Duration) async throws -> TakenBack {
        TakenBack(try await repository.releaseOrphanedLeases(held: held, idle: idle))
    }

    /// The reason a failed job records.
    func jobError(_ job: JobID) async -> String? {
        try? await repository.job(id: job)?.error
    }

    /// Leases the store took back, in the state machine's terms.
    struct TakenBack: Sendable {
        var leases: [TakenBackLease]
        /// The earliest moment one of them becomes claimable again.
        var firstRetry: Date?

        init(_ released: [ReleasedLease]) {
            leases = released.map { lease in
                let jobFailed = if case .jobFailed = lease.outcome { true } else { false }
                return TakenBackLease(job: lease.reference.job, leaseToken: lease.reference.token, jobFailed: jobFailed)
            }
            firstRetry = released.compactMap { lease -> Date? in
                if case .willRetry(let at) = lease.outcome { return at }
                return nil
            }.min()
        }
    }

    // MARK: - Claims

    /// Leases segments to the workers (up to each one's limit, in one statement) and builds their
    /// ASSIGN payloads: a fresh token and an attempt-unique output path each.
    func claim(_ demands: [ClaimDemand]) async throws -> [WorkerIdentity: [Assignment]] {
        let leases = try await repository.claimSegments(
            forWorkers: demands.map { JobRepository.ClaimDemand(workerID: $0.workerID, limit: $0.limit, encoders: $0.encoders) },
            leaseDuration: leaseDuration)
        var assignments: [WorkerIdentity: [Assignment]] = [:]
        for demand in demands {
            for lease in leases[demand.workerID] ?? [] {
                if let assignment = await assignment(for: lease) { assignments[demand.worker, default: []].append(assignment) }
            }
        }
        return assignments
    }

    /// Starts a backup attempt of `primary` on the demand's worker and builds its ASSIGN payload;
    /// nil when the store refuses it (the primary ended, the job has segments to claim, the
    /// segment had its backup).
    func claimBackup(of primary: SegmentAttempt, for demand: ClaimDemand) async throws -> Assignment? {
        guard let lease = try await repository.claimBackup(of: primary.lease, for: demand.workerID,
                                                           leaseDuration: leaseDuration)
        else { return nil }
        return await assignment(for: lease)
    }

    /// The ASSIGN payload of one lease; nil (and the segment ended for good) when the job's plan
    /// cannot be read, which no retry would change.
    private func assignment(for lease: SegmentLease) async -> Assignment? {
        let segment = lease.segment
        let job = segment.jobID
        let token = lease.reference.token
        let attempt = SegmentAttempt(job: job, segment: segment.plan.index, attempt: segment.attempt, leaseToken: token)
        do {
            let spec = try await workOrder(job: segment.jobID, segment: segment.plan.index)
            let output = spool.segmentPath(job: job, segment: segment.plan.index, attempt: segment.attempt, leaseToken: token)
            return Assignment(attempt: attempt, outputPath: output, spec: spec, cost: segment.plan.cost)
        } catch {
            let failure = SegmentFailure(message: "the job's plan cannot be read: \(error)", isRetryable: false)
            _ = try? await repository.failSegment(lease.reference, failure: failure)
            return nil
        }
    }

    /// The ASSIGN `spec`: the `SegmentWorkOrder` — the job's plan cut down to one segment —
    /// encoded once, here (the plan part of it once per job, by `PlannedJob`).
    private func workOrder(job: JobID, segment index: Int) async throws -> JSONPayload {
        guard let order = try await planned(job)?.order(index) else {
            throw CoordinatorError(.planUnreadable, "job \(job) has no plan for segment \(index)")
        }
        return try JSONPayload(encoding: order)
    }

    /// Whether the job's source is in storage (`s3://…`), which only the coordinator may open:
    /// its workers then read excerpts. False when the plan cannot be read.
    func sourceIsStored(job: JobID) async -> Bool {
        guard let planned = try? await planned(job) else { return false }
        return StorageRegistry.isStored(planned.source)
    }

    /// The job's plan as workers get it (``SegmentPlan/forWorkers()``), with every segment; nil
    /// when the job has none.
    func workerPlan(job: JobID) async throws -> SegmentPlan? {
        try await planned(job)?.workerPlan
    }

    private func planned(_ job: JobID) async throws -> PlannedJob? {
        let repository = self.repository
        return try await plans.value(for: job) { () async throws -> PlannedJob? in
            guard let plan = try await repository.job(id: job)?.plan else { return nil }
            do {
                return try PlannedJob(try plan.decode(SegmentPlan.self))
            } catch {
                throw CoordinatorError(.planUnreadable, "job \(job): its plan is not a segment plan: \(error)")
            }
        }
    }

    /// Drops what is cached about a job that has ended.
    func forget(job: JobID) {
        plans.forget(job)
    }
}

extension SegmentAttempt {
    /// The store's name for this attempt's lease: the same job, segment and token.
    var lease: LeaseReference { LeaseReference(job: job, segment: segment, token: leaseToken) }
}
