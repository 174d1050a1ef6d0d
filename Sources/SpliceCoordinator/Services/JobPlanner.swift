import Foundation
import SpliceLog
import SpliceMedia
import SpliceStore

/// Plans queued jobs: `queued → planning`, probe the source, cut it with `SegmentPlanner` using
/// the job's `TranscodeRequest`, record the plan and its segments (`planning → running`). A job found
/// in `planning` (the coordinator died mid-way) is simply planned again.
///
/// An unreadable input or settings that cannot work fail the job at once with the reason; a
/// transient failure (the store, an I/O hiccup) is retried with backoff a few times, then fails
/// the job too — nothing is retried forever.
final class JobPlanner: Sendable {
    private let repository: JobRepository
    private let logger: Logger
    private let planned: @Sendable () async -> Void
    private let rounds: JobRounds
    private let media: MediaTaskRunner
    private let lanes: @Sendable () async -> Int
    /// Set on jobs that ask nothing about quality (`splice coordinator --verify`).
    private let defaultVerify: VerifyMode?

    /// `planned` is called after each recorded plan (to wake the dispatcher); `lanes` says how many
    /// segments the cluster can encode at once now (the planner fills them evenly).
    init(repository: JobRepository, media: MediaTaskRunner, logger: Logger, defaultVerify: VerifyMode? = nil,
         lanes: @escaping @Sendable () async -> Int, planned: @escaping @Sendable () async -> Void) {
        self.media = media
        self.defaultVerify = defaultVerify
        self.lanes = lanes
        self.repository = repository
        self.logger = logger
        self.planned = planned
        self.rounds = JobRounds(stage: "planning", repository: repository, logger: logger)
    }

    /// One pass over the jobs waiting to be planned.
    func round() async {
        await rounds.forEachDue(in: [.queued, .planning]) { await plan($0) }
    }

    private func plan(_ job: Job) async {
        let fields: KeyValuePairs<String, any LogValue> = ["job": job.id.description, "input": job.input]
        do {
            try await repository.startPlanning(jobID: job.id)
        } catch let error as StoreError where error.code == .invalidTransition || error.code == .notFound {
            return  // cancelled (or planned) meanwhile
        } catch {
            await rounds.retry(job, after: error)
            return
        }
        logger.info("planning job", fields)
        let plan: SegmentPlan
        do {
            plan = try await makePlan(job)
        } catch let reason as PlanningFailure {
            await rounds.fail(job, reason: reason.message)
            return
        } catch {
            await rounds.retry(job, after: error)
            return
        }
        do {
            try await repository.recordPlan(
                jobID: job.id, plan: try PostgresJSON(encoding: plan),
                segments: try plan.segments.map { try SegmentRange(spec: $0, in: plan).planned },
                requiredEncoder: plan.videoSettings?.encoder)
        } catch let error as StoreError where error.code == .invalidTransition || error.code == .notFound {
            logger.info("plan dropped: the job ended while it was planned", fields)
            return
        } catch {
            await rounds.retry(job, after: error)
            return
        }
        rounds.succeeded(job)
        logger.info("job planned", ["job": job.id.description, "segments": plan.segments.count])
        await planned()
    }

    /// Probes the source and plans it (in a child process when so configured). Throws
    /// `PlanningFailure` when no retry can help.
    private func makePlan(_ job: Job) async throws -> SegmentPlan {
        var request: TranscodeRequest
        do {
            request = try job.settings.decode(TranscodeRequest.self)
            if request.quality == nil, let defaultVerify, request.video != nil, request.package == nil {
                request.quality = QualityRequest(verify: defaultVerify)
            }
            try request.validate()
        } catch let error as SettingsError {
            throw PlanningFailure("invalid settings: \(error)")
        } catch {
            throw PlanningFailure("the job's settings are not a valid export request: \(error)")
        }
        let planned: Result<SegmentPlan, MediaError>
        do {
            planned = .success(try await media.plan(source: job.input, request: request, lanes: await lanes()))
        } catch {
            planned = .failure(error)
        }
        switch planned {
        case .success(let plan) where plan.package != nil && !request.overwrite:
            // A package's rendition folders are known once its ladder is resolved: one already there
            // is refused now (SUBMIT checked the manifest), not replaced when the job is packaged.
            let layout = PackageLayout(plan: plan, output: JobStitcher.output(job.output))
            let source = job.input
            do {
                try await FileSystemQueue.run { try layout.check(source: source, overwrite: false) }
            } catch let error as MediaError {
                throw PlanningFailure(error.message)
            }
            return plan
        case .success(let plan): return plan
        case .failure(let error) where !error.isRetryable: throw PlanningFailure(error.message)
        case .failure(let error): throw error
        }
    }
}

/// A reason a job cannot be planned that no retry can fix, for the job's `error`.
struct PlanningFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
