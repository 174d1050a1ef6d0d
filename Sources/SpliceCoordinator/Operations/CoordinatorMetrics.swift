import Foundation
import SpliceCore
import SpliceMetrics
import SpliceStore
import SpliceWire
import Synchronization

/// The coordinator's figures that live in memory, counted where the events happen: the shell's
/// commits, hand-backs and releases, the reaper, the stitcher, the outbox. (Gauges that come from
/// the database or the sessions are read at scrape time: ``CoordinatorSite``.) All counts start
/// at 0 with the process.
final class CoordinatorMetrics: Sendable {
    let segmentsCompleted = Counter(
        "splice_segments_completed_total",
        help: "Segments whose COMPLETE was committed (each segment once; resends and stale results are not counted).")
    let attemptsFailed = Counter(
        "splice_segment_attempts_failed_total",
        help: "Segment attempts that ended without a result, by reason: the worker's FAIL code, or lease-expired, "
            + "lease-orphaned, worker-lost, not-accepted, undeliverable, reregistered.",
        labelNames: ["reason"], initial: AttemptFailure.common.map { [$0] })
    let backupsStarted = Counter(
        "splice_backup_attempts_started_total",
        help: "Backup attempts started for stragglers (a second attempt of a running segment on an idle worker).")
    let leaseExpiries = Counter(
        "splice_lease_expiries_total", help: "Leases the reaper took back because their worker stopped extending them.")
    let encodeSeconds = Histogram(
        "splice_segment_encode_seconds",
        help: "Encode wall time of each committed segment, as its worker reported it (COMPLETE encodeMilliseconds).",
        buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800])
    let dispatchLatency = Histogram(
        "splice_dispatch_latency_seconds",
        help: "From issuing a claim to its ASSIGN being sent to the worker.",
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
    let stitchSeconds = Histogram(
        "splice_stitch_seconds", help: "Stitching a job's segments into its output (stitches that succeeded).",
        buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600])
    let segmentPSNR = Histogram(
        "splice_segment_psnr_db",
        help: "Luma PSNR (of the mean squared error) of each committed segment that was measured (--verify, "
            + "--target-quality), against the source frames its worker decoded.",
        buckets: [25, 30, 33, 36, 38, 40, 42, 44, 46, 50, 60])
    let segmentSSIM = Histogram(
        "splice_segment_ssim", help: "Mean luma SSIM of each committed segment that was measured (--verify, --target-quality).",
        buckets: [0.8, 0.9, 0.95, 0.97, 0.98, 0.985, 0.99, 0.995, 0.999])
    let jobDuration = Histogram(
        "splice_job_duration_seconds", help: "From submission to completion, for jobs that succeeded.",
        buckets: [5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200])

    let httpRequests = Counter(
        "splice_http_requests_total", help: "HTTP API requests answered by the API, by status code.",
        labelNames: ["code"])
    let httpRateLimited = Counter(
        "splice_http_rate_limited_total", help: "HTTP API requests refused 429 because their token was over its rate.")
    let webhookDeliveries = Counter(
        "splice_webhook_deliveries_total",
        help: "Webhook delivery attempts by outcome: delivered (2xx), failed (tried again later), expired (given up).",
        labelNames: ["outcome"], initial: WebhookOutcome.allCases.map { [$0.rawValue] })

    let jobsPruned = Counter(
        "splice_jobs_pruned_total",
        help: "Finished jobs deleted with their segments, events and files by retention (--retention, "
            + "`splice jobs prune`).")

    /// When the claim that leased each attempt was issued, until its ASSIGN is sent.
    private let claimTimes = Mutex<[LeaseToken: ContinuousClock.Instant]>([:])
    private let throughput = Mutex(Throughput())

    /// The in-memory families, in exposition order.
    var sources: [any MetricSource] {
        [segmentsCompleted, attemptsFailed, backupsStarted, leaseExpiries, encodeSeconds, dispatchLatency, stitchSeconds,
         segmentPSNR, segmentSSIM, jobDuration, httpRequests, httpRateLimited, webhookDeliveries, jobsPruned]
    }

    // MARK: - Results and attempts

    /// A COMPLETE or FAIL was committed with `outcome` (only first commits count; a resend is
    /// `alreadyCompleted` or answered from memory, a fenced-off one `stale`).
    func committed(_ result: WorkerResult, outcome: ResultOutcome) {
        switch (result, outcome) {
        case (.complete(let complete), .completed):
            segmentsCompleted.increment()
            encodeSeconds.observe(Double(complete.encodeMilliseconds) / 1000)
            if let quality = complete.figures?.quality {
                segmentPSNR.observe(quality.psnrY)
                segmentSSIM.observe(quality.ssimY)
            }
        case (.fail(let fail), .recorded):
            attemptsFailed.increment([AttemptFailure.reason(code: fail.code.rawValue)])
        default:
            break
        }
    }

    /// A backup attempt was claimed for a straggler.
    func backupStarted() {
        backupsStarted.increment()
    }

    /// The shell ended an attempt without a result (`abandonAttempt`); `recorded` when the store
    /// took it (not fenced off).
    func abandoned(reason: String, recorded: Bool) {
        guard recorded else { return }
        attemptsFailed.increment([AttemptFailure.reason(abandoned: reason)])
    }

    /// The store took back `count` leases for `reason` (`lease-expired`, `lease-orphaned`, `worker-lost`).
    func takenBack(_ count: Int, reason: String) {
        guard count > 0 else { return }
        attemptsFailed.increment([reason], by: Double(count))
        if reason == AttemptFailure.leaseExpired { leaseExpiries.increment(by: Double(count)) }
    }

    // MARK: - Dispatch latency

    /// A claim issued at `issued` came back with these assignments.
    func claimed(_ assignments: [WorkerIdentity: [Assignment]], issued: ContinuousClock.Instant) {
        claimTimes.withLock { claimed in
            if claimed.count > 50_000 {
                // ASSIGNs never sent (their worker left): forget the old ones.
                let horizon = ContinuousClock.now - .seconds(300)
                claimed = claimed.filter { $0.value > horizon }
            }
            for assignment in assignments.values.joined() { claimed[assignment.attempt.leaseToken] = issued }
        }
    }

    /// These messages went out on the worker endpoint.
    func sent(_ messages: [CoordinatorMessage], at now: ContinuousClock.Instant = .now) {
        let issued: [ContinuousClock.Instant] = claimTimes.withLock { claimed in
            messages.compactMap { message in
                guard case .assign(let assign) = message else { return nil }
                return claimed.removeValue(forKey: assign.attempt.leaseToken)
            }
        }
        for start in issued { dispatchLatency.observe((now - start).inSeconds) }
    }

    // MARK: - Workers' frames per second

    /// Messages read from the worker endpoint: COMPLETEs carry the frames of their segment.
    func received(_ batch: [Received<WorkerMessage>], at now: ContinuousClock.Instant = .now) {
        throughput.withLock { throughput in
            for case .message(let envelope, let peer) in batch {
                guard let identity = WorkerIdentity(peer: peer) else { continue }
                throughput.heard(identity, at: now)
                if case .complete(let complete) = envelope.message, let frames = complete.videoFrames {
                    throughput.completed(identity, token: complete.attempt.leaseToken, frames: frames, at: now)
                }
            }
            throughput.prune(now: now)
        }
    }

    /// Frames per second of the segments `identity` completed over the last minute (or since it
    /// was first heard, if later); nil when it reports no frame counts.
    func framesPerSecond(_ identity: WorkerIdentity, now: ContinuousClock.Instant = .now) -> Double? {
        throughput.withLock { $0.rate(identity, now: now) }
    }
}

/// Completed frames per worker over a sliding window.
struct Throughput: Sendable {
    static let window: Duration = .seconds(60)

    struct Worker: Sendable {
        var firstHeard: ContinuousClock.Instant
        var lastHeard: ContinuousClock.Instant
        var completions: [(token: LeaseToken, frames: Int, at: ContinuousClock.Instant)] = []
        var reportsFrames = false
    }

    private var workers: [WorkerIdentity: Worker] = [:]
    private var lastPrune: ContinuousClock.Instant?

    mutating func heard(_ identity: WorkerIdentity, at now: ContinuousClock.Instant) {
        workers[identity, default: Worker(firstHeard: now, lastHeard: now)].lastHeard = now
    }

    mutating func completed(_ identity: WorkerIdentity, token: LeaseToken, frames: Int, at now: ContinuousClock.Instant) {
        guard var worker = workers[identity] else { return }
        worker.reportsFrames = true
        // A COMPLETE is resent until acknowledged: count each attempt once.
        if !worker.completions.contains(where: { $0.token == token }) {
            worker.completions.append((token, frames, now))
        }
        worker.completions.removeAll { now - $0.at > Self.window }
        workers[identity] = worker
    }

    func rate(_ identity: WorkerIdentity, now: ContinuousClock.Instant) -> Double? {
        guard let worker = workers[identity], worker.reportsFrames else { return nil }
        let span = min(Self.window, now - worker.firstHeard)
        guard span > .milliseconds(500) else { return nil }
        let frames = worker.completions.filter { now - $0.at <= Self.window }.reduce(0) { $0 + $1.frames }
        return Double(frames) / span.inSeconds
    }

    /// Forgets workers not heard for ten minutes (at most every ten seconds).
    mutating func prune(now: ContinuousClock.Instant) {
        guard lastPrune.map({ now - $0 > .seconds(10) }) ?? true else { return }
        lastPrune = now
        workers = workers.filter { now - $0.value.lastHeard < .seconds(600) }
    }
}

/// The bounded set of `reason` labels of `splice_segment_attempts_failed_total`.
enum AttemptFailure {
    static let leaseExpired = "lease-expired"
    static let leaseOrphaned = "lease-orphaned"
    static let workerLost = "worker-lost"

    /// FAIL codes a worker sends, as `Fail.Code` defines them (docs/protocol.md); a code this build
    /// does not know (a newer worker's) is `other`, so the label set stays bounded.
    static let failCodes = Set(Fail.Code.allCases.map(\.rawValue))

    /// Reasons exposed at 0 from the start, so rates over them exist before the first failure.
    static let common = [leaseExpired, workerLost, "not-accepted", "encode-failed", "undecodable-input"]

    static func reason(code: String) -> String {
        failCodes.contains(code) ? code : "other"
    }

    /// The shell's hand-backs, by the reasons the state machine gives.
    static func reason(abandoned text: String) -> String {
        if text.hasPrefix("the worker did not accept") { return "not-accepted" }
        if text.hasPrefix("the assignment could not be delivered") { return "undeliverable" }
        if text.hasPrefix("the worker registered again") { return "reregistered" }
        if text.hasPrefix("the worker left") { return workerLost }
        return "abandoned"
    }
}

extension Duration {
    /// The duration in seconds, as metrics carry it.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
