import Foundation
import SpliceStore
import SpliceTestSupport
import Testing

/// `splice submit --wait` of a job to a ``LocalCluster``, timed from the moment it starts.
struct FaultJob: Sendable {
    let process: SpliceProcess
    let output: String
    let started: ContinuousClock.Instant

    /// Submits `input` (the fault clip by default) → `output` with the fault flags.
    static func submit(to cluster: LocalCluster, output: String, input: String? = nil) async throws -> FaultJob {
        let input = if let input { input } else { try await FaultMedia.source() }
        let started = ContinuousClock.now
        let process = try SpliceProcess(["submit", input, output, "--wait", "--coordinator", cluster.apiEndpoints]
                                        + FaultMedia.flags())
        return FaultJob(process: process, output: output, started: started)
    }

    /// The job id, once `splice submit` has printed it.
    func id(within timeout: Duration = .seconds(60)) async throws -> String {
        _ = await eventually(within: timeout) { SpliceProcess.submittedJob(in: process.stderrText) != nil }
        guard let job = SpliceProcess.submittedJob(in: process.stderrText) else {
            throw TestFailure("splice submit named no job within \(timeout): \(process.stderrText)")
        }
        return job
    }

    /// Waits for `splice submit` to exit (killed, and an issue recorded, after `timeout`); its
    /// result and the wall time since it started.
    func finish(within timeout: Duration) async -> (result: SpliceProcess.Result, wall: Duration) {
        let result = await process.finish(within: timeout)
        return (result, ContinuousClock.now - started)
    }

    var isRunning: Bool { process.isRunning }
}

/// The end every run shares: the store's counts and the oracle's verdict, asserted (each must be
/// able to fail), and the run's figures.
func conclude(
    job: String, in cluster: LocalCluster, output: String?, wall: Duration, extra: [(String, String)] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> (figures: RunFigures, ledger: SegmentLedger) {
    let ledger = try await SegmentLedger.read(job: job, in: cluster)
    #expect(ledger.committedTwice == 0, "segments committed more than once: \(ledger)", sourceLocation: sourceLocation)
    #expect(ledger.lost == 0, "committed results lost: \(ledger)", sourceLocation: sourceLocation)
    #expect(ledger.unexpected == 0, "results committed for leases never issued: \(ledger)",
            sourceLocation: sourceLocation)
    var check: OutputCheck?
    if let output {
        let verdict = try await OutputCheck.of(output)
        #expect(verdict.exact, "the output differs from the fault-free run: \(verdict)", sourceLocation: sourceLocation)
        check = verdict
    }
    let figures = RunFigures(ledger: ledger, output: check, wall: wall,
                             extra: extra + [("attempts", "\(ledger.attempts)")])
    return (figures, ledger)
}

// MARK: - Reading the workers' logs

/// A `segment started` line of a worker's log: which attempt it began.
struct SegmentStart: Sendable {
    /// The worker's index in `LocalCluster.workers` when it was seen.
    var index: Int
    var worker: String
    var job: String
    var segment: Int
    var attempt: Int
    var output: String

    init?(index: Int, worker: String, line: Substring) {
        func field(_ name: String) -> String? {
            line.split(separator: " ").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
        }
        guard let job = field("job"), let segment = field("segment").flatMap(Int.init),
              let attempt = field("attempt").flatMap(Int.init), let output = field("output") else { return nil }
        self.index = index
        self.worker = worker
        self.job = job
        self.segment = segment
        self.attempt = attempt
        self.output = output
    }
}

extension SegmentStart {
    /// What a worker woken after its lease ran out did with this attempt, from its log:
    /// `complete-refused` (it finished, sent COMPLETE and was told `stale`) or `aborted-<reason>`
    /// (`lease-expiring`: it saw its own deadline pass; `cancelled`: the coordinator's CANCEL
    /// `lease-lost`; `stale`: an ACK `stale` for its PROGRESS). Nil while it has shown neither.
    func wokenOutcome(in log: String) -> String? {
        let fields = "job=\(job) segment=\(segment) attempt=\(attempt) "
        let lines = log.split(separator: "\n").filter { $0.contains(fields) }
        if lines.contains(where: { $0.contains("acknowledges=COMPLETE outcome=stale") }) { return "complete-refused" }
        // Woken, its encode may fail first (the job's spool folder went with the finished job)
        // and report that: the late FAIL is refused the same way.
        if lines.contains(where: { $0.contains("acknowledges=FAIL outcome=stale") }) { return "fail-refused" }
        guard let abort = lines.first(where: { $0.contains(#"msg="segment aborted""#) }) else { return nil }
        let reason = abort.split(separator: " ").first { $0.hasPrefix("reason=") }?.dropFirst("reason=".count)
        return "aborted-" + (reason.map(String.init) ?? "unknown")
    }
}

extension LocalCluster {
    /// Waits (polling every 20 ms) for a worker to log a `segment started` beyond those counted in
    /// `seen` (per worker name, updated); nil after `timeout` or once `giveUp` says so.
    func nextSegmentStart(seen: inout [String: Int], within timeout: Duration, giveUp: () -> Bool) async
        -> SegmentStart?
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !giveUp() {
            for (index, worker) in workers.enumerated() {
                let starts = worker.process.output.split(separator: "\n")
                    .filter { $0.contains(#"msg="segment started""#) }
                let counted = seen[worker.name, default: 0]
                guard starts.count > counted else { continue }
                seen[worker.name] = starts.count
                if let start = SegmentStart(index: index, worker: worker.name, line: starts[counted]) { return start }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}
