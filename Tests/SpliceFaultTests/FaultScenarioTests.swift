import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The fault suite: the real `splice coordinator` (on a PostgreSQL of its own, reached by URL, so
// the database can be restarted under it), two or three real `splice worker`s and `splice submit
// --wait`, under one fault per scenario. Each run is judged the way Jepsen judges a queue
// (SegmentLedger: segments committed twice, results lost, results nobody asked for, all from the
// store's append-only job_events and the segments table) and by an independent decoder
// (OutputCheck: ffprobe's frame count, ffmpeg's per-frame MD5s and audio sample count against the
// fault-free run). Each scenario prints one `fault scenario=… runs=… outcome=… committed_twice=…
// lost=… exact=… wall_s=…` line; docs/reliability.md has the figures and how to run it.
//
// Serialized: two scenarios at once would share two cores and each other's timing. Waits are
// generous for the same reason: the rest of the test suite may be running beside this one.

@Suite("Fault suite: the real processes under faults, counted", .serialized,
       .timeLimit(FaultRuns.isSoak ? .minutes(120) : .minutes(12)))
struct FaultScenarioTests {
    // MARK: - 0. The checkers

    @Test("the checkers fail when they should: forged commits in the store, a cut and a re-encoded output")
    func checkersCatchForgeries() async throws {
        let cluster = try await LocalCluster.start(workers: 2, leaseSeconds: nil)
        let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("checked.mp4"))
        let (result, _) = await job.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        let id = try #require(SpliceProcess.submittedJob(in: result.stderr))
        let clean = try await SegmentLedger.read(job: id, in: cluster)
        #expect(clean.committedTwice == 0 && clean.lost == 0 && clean.unexpected == 0, "\(clean)")

        // Forge the three kinds of history the ledger must catch. Segment 0: its commit recorded
        // twice. Segment 1: the committed attempt no longer the segment's. Segment 2: a commit for a
        // lease token nobody issued (which also makes it committed twice, and its first result lost).
        let jobID = try #require(UUID(uuidString: id))
        let store = cluster.repository.client
        try await store.query("""
            INSERT INTO job_events (job_id, segment_id, kind, attempt, worker_id, lease_token)
            SELECT e.job_id, e.segment_id, 'segment_done', e.attempt, e.worker_id, e.lease_token
            FROM job_events e JOIN segments s ON s.id = e.segment_id
            WHERE e.job_id = \(jobID) AND e.kind = 'segment_done' AND s.index = 0
            """)
        try await store.query("""
            UPDATE segments SET lease_token = gen_random_uuid() WHERE job_id = \(jobID) AND index = 1
            """)
        try await store.query("""
            INSERT INTO job_events (job_id, segment_id, kind, attempt, lease_token)
            SELECT job_id, id, 'segment_done', attempt, gen_random_uuid() FROM segments
            WHERE job_id = \(jobID) AND index = 2
            """)
        let forged = try await SegmentLedger.read(job: id, in: cluster)
        #expect(forged.committedTwice == 2, "segments 0 and 2: \(forged)")
        #expect(forged.lost == 2, "segments 1 and 2: \(forged)")
        #expect(forged.unexpected == 1, "segment 2: \(forged)")

        // The oracle: the output is exact; a copy missing its last second is not, and neither is
        // a re-encode with every picture and sample still there.
        let real = try await OutputCheck.of(job.output)
        #expect(real.exact, "\(real)")
        let cut = cluster.outputPath("cut.mp4"), reencoded = cluster.outputPath("reencoded.mp4")
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", job.output, "-t", "23", "-c", "copy", cut])
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", job.output, "-c:v", "libx264", "-preset",
                                                "ultrafast", "-crf", "40", "-c:a", "copy", reencoded])
        let cutCheck = try await OutputCheck.of(cut), reencodedCheck = try await OutputCheck.of(reencoded)
        #expect(!cutCheck.exact && cutCheck.frames < cutCheck.referenceFrames, "\(cutCheck)")
        #expect(!reencodedCheck.exact && reencodedCheck.frames == reencodedCheck.referenceFrames
                    && reencodedCheck.firstDifferentPicture != nil, "\(reencodedCheck)")
        try await cluster.stop()
    }

    // MARK: - 1. Workers killed

    @Test("worker SIGKILL storm: 10 kills inside encodes during one job (default lease), each worker restarted")
    func workerKillStorm() async throws {
        var figures = ScenarioFigures("worker-kill-storm")
        for _ in 0..<FaultRuns.count {
            // The coordinator's default lease (60 s): a killed worker's segment comes back when its
            // lease runs out, which the wall time shows.
            var cluster = try await LocalCluster.start(workers: 3, leaseSeconds: nil)
            let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("worker-kill-storm.mp4"))
            var seen: [String: Int] = [:]
            var killed: [String] = []
            while killed.count < FaultRuns.workerKills {
                // The next worker to start a segment dies inside that encode. After the first round
                // the remaining starts may wait for leases to run out: wait long.
                guard let start = await cluster.nextSegmentStart(seen: &seen, within: .seconds(240),
                                                                 giveUp: { !job.isRunning })
                else {
                    Issue.record("the job ended or stalled after \(killed.count) worker kills\n\(cluster.logs)")
                    break
                }
                let victim = cluster.workers[start.index]
                victim.process.signal(SIGKILL)
                let status = await victim.process.exitStatus()
                #expect(status?.signalled == true && status?.status == SIGKILL,
                        "\(victim.name) did not die of SIGKILL")
                killed.append(victim.name)
                try cluster.replaceWorker(at: start.index)
            }
            let (result, wall) = await job.finish(within: .seconds(600))
            #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
            let id = try #require(SpliceProcess.submittedJob(in: result.stderr))
            // The kills that left a lease behind: leased to a killed worker, never completed by it.
            let events = try await cluster.events(of: id)
            var stranded = 0
            for name in killed {
                guard let worker = try await cluster.workerID(named: name) else { continue }
                func tokens(_ kind: String) -> Set<LeaseToken> {
                    Set(events.filter { $0.kind == kind && $0.workerID == worker }.compactMap(\.leaseToken))
                }
                stranded += tokens("segment_leased").subtracting(tokens("segment_done")).count
            }
            #expect(killed.count == FaultRuns.workerKills)
            #expect(stranded >= 1, "no kill landed while its worker held a lease: the storm tested nothing")
            let (run, _) = try await conclude(
                job: id, in: cluster, output: job.output, wall: wall,
                extra: [("kills", "\(killed.count)"), ("stranded_leases", "\(stranded)"),
                        ("lease_expired", "\(events.filter { $0.kind == "segment_lease_expired" }.count)"),
                        ("lease_released", "\(events.filter { $0.kind == "segment_lease_released" }.count)")])
            figures.record(run, logs: cluster.logs)
            try await cluster.stop()
        }
        figures.finish()
    }

    // MARK: - 2. The coordinator killed

    @Test("coordinator SIGKILL storm: 5 kills and restarts on the same ports during one job; submit --wait exits 0")
    func coordinatorKillStorm() async throws {
        var figures = ScenarioFigures("coordinator-kill-storm")
        for _ in 0..<FaultRuns.count {
            // Two workers: each restart commits at most one held result per worker, so the job
            // outlasts the storm.
            var cluster = try await LocalCluster.start(workers: 2, leaseSeconds: nil)
            let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("coordinator-kill-storm.mp4"))
            let id = try await job.id()
            var phases: [String] = []
            var doneAtLastKill = 0
            for kill in 1...FaultRuns.coordinatorKills {
                // The first kill once a lease is out (dispatch under way, nothing committed); each
                // next one as soon as the restarted coordinator has committed something more.
                _ = await eventually(within: .seconds(180)) {
                    guard let row = try? await cluster.job(id) else { return false }
                    if row.state.isTerminal { return true }
                    if kill == 1 {
                        return (try? await cluster.events(of: id))?.contains { $0.kind == "segment_leased" } ?? false
                    }
                    return row.segmentsDone > doneAtLastKill
                }
                let row = try #require(try await cluster.job(id))
                guard !row.state.isTerminal, kill == 1 || row.segmentsDone > doneAtLastKill else {
                    let state = "\(row.state.rawValue) with \(row.segmentsDone) segments done"
                    Issue.record("the job was \(state) after only \(kill - 1) coordinator kills\n\(cluster.logs)")
                    break
                }
                cluster.coordinator.signal(SIGKILL)
                let status = await cluster.coordinator.exitStatus()
                #expect(status?.signalled == true && status?.status == SIGKILL,
                        "the coordinator did not die of SIGKILL")
                let dead = try #require(try await cluster.job(id))
                doneAtLastKill = dead.segmentsDone
                phases.append("\(dead.state.rawValue)@\(dead.segmentsDone)")
                try await cluster.restartCoordinator()
            }
            let (result, wall) = await job.finish(within: .seconds(600))
            #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
            #expect(result.stdout == "job \(id) succeeded: \(job.output)\n")
            #expect(phases.count == FaultRuns.coordinatorKills)
            let (run, _) = try await conclude(
                job: id, in: cluster, output: job.output, wall: wall,
                extra: [("kills", "\(phases.count)"), ("killed_at", phases.joined(separator: ","))])
            figures.record(run, logs: cluster.logs)
            try await cluster.stop()
        }
        figures.finish()
    }

    // MARK: - 3. PostgreSQL restarted

    enum DatabaseFault: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// `pg_ctl stop -m fast` and start again at once (what `pg_ctl restart -m fast` does).
        case restart = "postgres-restart"
        /// Stopped (fast), 20 s without a database, started.
        case outage = "postgres-outage-20s"

        var testDescription: String { rawValue }
        var outage: Duration { self == .outage ? .seconds(20) : .zero }
    }

    @Test("PostgreSQL restarted mid-job, and down for 20 s: coordinator and workers recover, the job is exact",
          arguments: DatabaseFault.allCases)
    func postgresFault(_ fault: DatabaseFault) async throws {
        var figures = ScenarioFigures(fault.rawValue)
        for _ in 0..<FaultRuns.count {
            // A server of its own, reached by URL like any external PostgreSQL.
            let server = try await TestPostgres.makePrivateServer()
            try await withCleanup({ try? await server.stop(mode: .immediate) }) {
                let database = try await server.createDatabase("faults")
                try await Migrator(configuration: database).migrate()
                let cluster = try await LocalCluster.start(workers: 3, leaseSeconds: nil, database: database)
                let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("\(fault.rawValue).mp4"))
                let id = try await job.id()
                let progressed = await eventually(within: .seconds(180)) {
                    (try? await cluster.job(id))?.segmentsDone ?? 0 >= 1
                }
                #expect(progressed, "no segment done\n\(cluster.logs)")
                let before = try #require(try await cluster.job(id))
                let progress = "\(before.state.rawValue), \(before.segmentsDone)/\(before.segmentsTotal) done"
                #expect(!before.state.isTerminal && before.segmentsDone < before.segmentsTotal,
                        "the fault must land mid-job: \(progress)")
                try await server.stop(mode: .fast)
                if fault.outage > .zero {
                    let outageStart = ContinuousClock.now
                    // Asked meanwhile, the coordinator says its store is down, not nothing at all.
                    let asked = try await SpliceProcess.run(["status", id, "--coordinator", cluster.coordinator.api])
                    #expect(asked.status == 1 && asked.stderr.contains("job store is not answering"),
                            "splice status during the outage: \(asked.stderr)")
                    try await Task.sleep(for: max(.zero, fault.outage - (ContinuousClock.now - outageStart)))
                    #expect(cluster.coordinator.process.isRunning, "the coordinator gave up without its database")
                    #expect(cluster.workers.allSatisfy { $0.process.isRunning }, "a worker gave up")
                }
                try await server.start()
                let back = Date()
                let (result, wall) = await job.finish(within: .seconds(600))
                #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
                let (run, ledger) = try await conclude(
                    job: id, in: cluster, output: job.output, wall: wall,
                    extra: [("outage_s", "\(fault.outage.components.seconds)"),
                            ("done_at_fault", "\(before.segmentsDone)/\(before.segmentsTotal)")])
                // The job went on after the database came back (an event's time is the server's clock,
                // the same machine's).
                #expect(ledger.events("segment_done").contains { $0.at > back },
                        "nothing was committed after the restart: it did not land mid-job")
                #expect(cluster.coordinator.process.isRunning && cluster.retiredCoordinators.isEmpty)
                figures.record(run, logs: cluster.logs)
                try await cluster.stop()
            }
        }
        figures.finish()
    }

    // MARK: - 4. A worker paused past its lease

    @Test("a worker SIGSTOPped past its 4 s lease, then SIGCONT: its attempt is fenced off, the segment done once")
    func workerPausedPastLease() async throws {
        var figures = ScenarioFigures("worker-paused-past-lease")
        for _ in 0..<FaultRuns.count {
            // Without backup attempts, which would finish the paused worker's segment before its
            // lease runs out (the next scenario): this one is about the fence after expiry.
            let cluster = try await LocalCluster.start(workers: 3, leaseSeconds: 4,
                                                       coordinatorFlags: ["--backup-after", "0"])
            let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("worker-paused.mp4"))
            // SIGSTOP the next worker to start a segment. An encode takes a tenth of a second: if the
            // stop came too late (the segment is committed as the victim's), wake it and aim again.
            var seen: [String: Int] = [:]
            var aimed = 0
            var target: (start: SegmentStart, victim: ChildWorker, victimID: UUID, segmentID: Int64,
                         stopped: ContinuousClock.Instant)?
            while target == nil, aimed < 20 {
                guard let start = await cluster.nextSegmentStart(seen: &seen, within: .seconds(120),
                                                                 giveUp: { !job.isRunning }) else { break }
                let victim = cluster.workers[start.index]
                victim.process.signal(SIGSTOP)
                let stopped = ContinuousClock.now
                aimed += 1
                // A COMPLETE already on its way is committed within this pause; then look.
                try await Task.sleep(for: .milliseconds(500))
                let victimID = try #require(try await cluster.workerID(named: victim.name))
                let segmentID = try #require(try await cluster.segments(of: start.job)
                    .first { $0.plan.index == start.segment }?.id)
                let committedByVictim = try await cluster.events(of: start.job).contains {
                    $0.kind == "segment_done" && $0.segmentID == segmentID && $0.workerID == victimID
                }
                if committedByVictim {
                    victim.process.signal(SIGCONT)
                } else {
                    target = (start, victim, victimID, segmentID, stopped)
                }
            }
            let (start, victim, victimID, segmentID, stopped) = try #require(
                target, "no SIGSTOP landed inside an encode in \(aimed) tries\n\(cluster.logs)")
            // The lease runs out while the worker sleeps, and another worker does the segment.
            let redone = await eventually(within: .seconds(120)) {
                (try? await cluster.events(of: start.job))?.contains { event in
                    event.kind == "segment_done" && event.segmentID == segmentID && event.workerID != victimID
                } ?? false
            }
            #expect(redone, "segment \(start.segment) was not done by another worker while \(victim.name) slept")
            let leased = try #require(try await cluster.events(of: start.job).first {
                $0.kind == "segment_leased" && $0.segmentID == segmentID && $0.workerID == victimID
                    && $0.attempt == start.attempt
            })
            // Its COMPLETE, delivered late (what the woken worker would send had it finished first).
            let token = try #require(leased.leaseToken)
            let late = Complete(
                attempt: SegmentAttempt(job: try #require(JobID(start.job)), segment: start.segment, attempt: start.attempt,
                                        leaseToken: token),
                outputPath: start.output, checksum: try #require(SHA256Digest("sha256:" + String(repeating: "0", count: 64))),
                sizeBytes: 1, encodeMilliseconds: 1)
            let lateOutcome = try await LateResult.deliver(late, to: cluster.coordinator.workers)
            #expect(lateOutcome == .stale,
                    "the late COMPLETE of a reaped lease was answered \(String(describing: lateOutcome))")
            victim.process.signal(SIGCONT)
            let pause = ContinuousClock.now - stopped
            // The woken worker either notices its lease is gone and aborts, or sends its result and is
            // told it is stale.
            let fenced = await eventually(within: .seconds(60)) { start.wokenOutcome(in: victim.process.output) != nil }
            let victimLog = victim.process.output
            #expect(fenced, "\(victim.name) neither aborted its lapsed attempt nor was told it was stale\n\(victimLog)")
            let (result, wall) = await job.finish(within: .seconds(600))
            #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
            let (run, ledger) = try await conclude(
                job: start.job, in: cluster, output: job.output, wall: wall,
                extra: [("paused_s", String(format: "%.1f", RunFigures.seconds(pause))), ("stops_aimed", "\(aimed)"),
                        ("victim", start.wokenOutcome(in: victim.process.output) ?? "no-sign"),
                        ("late_complete", lateOutcome?.rawValue ?? "unanswered")])
            // The segment: done exactly once, by a later attempt on another worker; the paused
            // attempt's lease expired and its result was refused.
            let done = ledger.events("segment_done").filter { $0.segmentID == segmentID }
            #expect(done.count == 1 && done.first?.workerID != victimID && (done.first?.attempt ?? 0) > start.attempt,
                    "segment \(start.segment): \(done)")
            // Taken back either way: its 4 s lease expired, or its silence (3 heartbeat intervals)
            // released it first, whichever the reaper and the timer saw first.
            #expect((ledger.events("segment_lease_expired") + ledger.events("segment_lease_released"))
                        .contains { (event: JobEvent) in event.leaseToken == leased.leaseToken },
                    "the paused attempt's lease was not taken back")
            #expect(cluster.coordinator.output.contains(#"msg="stale result refused""#),
                    "the coordinator did not log the refused late result")
            figures.record(run, logs: cluster.logs)
            try await cluster.stop()
        }
        figures.finish()
    }

    // MARK: - 4b. A straggler, backed up

    @Test("a worker SIGSTOPped (less than its lease) holding one of the job's last segments: a backup attempt on the idle worker wins, exact output, no failure counted")
    func stragglerBackedUp() async throws {
        var figures = ScenarioFigures("straggler-backup")
        for _ in 0..<FaultRuns.count {
            let cluster = try await LocalCluster.start(workers: 2, leaseSeconds: 60)
            let workerIDs = try await cluster.repository.workers()
            // Once nothing of the job is left to claim, stop a worker holding one of its last
            // segments. An encode takes a tenth of a second: when the stop came too late (the
            // segment is committed as the victim's), wake it and try with a new job.
            var target: (job: FaultJob, id: String, victim: ChildWorker, victimID: UUID, segment: Segment,
                         stopped: ContinuousClock.Instant)?
            var aimed = 0
            while target == nil, aimed < 10 {
                aimed += 1
                let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("straggler-\(aimed).mp4"))
                let id = try await job.id()
                var leased: Segment?
                while leased == nil, job.isRunning {
                    let segments = try await cluster.segments(of: id)
                    if !segments.isEmpty, !segments.contains(where: { $0.state == .pending }) {
                        leased = segments.first { $0.state == .leased }
                    }
                    if leased == nil { try await Task.sleep(for: .milliseconds(5)) }
                }
                guard let leased, let holder = leased.leasedBy,
                      let name = workerIDs.first(where: { $0.id == holder })?.name,
                      let victim = cluster.workers.first(where: { $0.name == name })
                else { _ = await job.finish(within: .seconds(120)); continue }
                victim.process.signal(SIGSTOP)
                let stopped = ContinuousClock.now
                try await Task.sleep(for: .milliseconds(300))
                let committedByVictim = try await cluster.events(of: id).contains {
                    $0.kind == "segment_done" && $0.segmentID == leased.id && $0.workerID == holder
                }
                if committedByVictim {
                    victim.process.signal(SIGCONT)
                    _ = await job.finish(within: .seconds(120))
                } else {
                    target = (job, id, victim, holder, leased, stopped)
                }
            }
            let (job, id, victim, victimID, segment, stopped) = try #require(
                target, "no SIGSTOP landed inside one of a job's last encodes in \(aimed) tries\n\(cluster.logs)")
            // The job finishes while the victim sleeps, through a backup on the other worker.
            let (result, wall) = await job.finish(within: .seconds(50))
            let finishedAsleep = ContinuousClock.now - stopped
            victim.process.signal(SIGCONT)
            #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
            let status = try await SpliceProcess.run(["status", id, "--coordinator", cluster.coordinator.api])
            let events = try await cluster.events(of: id)
            let started = try #require(events.first { $0.kind == "segment_backup_started" && $0.segmentID == segment.id },
                                       "no backup of segment \(segment.plan.index)\n\(cluster.logs)")
            #expect(started.workerID != victimID && started.leaseToken != segment.leaseToken)
            let done = events.filter { $0.kind == "segment_done" && $0.segmentID == segment.id }
            #expect(done.count == 1 && done.first?.leaseToken == started.leaseToken && done.first?.workerID != victimID,
                    "segment \(segment.plan.index) was not done by its backup: \(done)")
            #expect(events.contains { $0.kind == "segment_backup_won" && $0.segmentID == segment.id })
            // The straggler lost a race: no attempt spent, nothing counted as failed.
            let summary = try #require(try await cluster.repository.jobSummaries().first { $0.id.uuidString.lowercased() == id })
            #expect(summary.failedAttempts == 0, "failed attempts: \(events.map(\.kind))")
            #expect(summary.progress.backupsStarted == 1 && summary.progress.backupsWon == 1)
            #expect(try await cluster.segments(of: id).allSatisfy { $0.attempt == 1 && $0.failedWorkers.isEmpty })
            #expect(status.stdout.contains("backups") && status.stdout.contains("1 started, 1 won"),
                    "splice status: \(status.stdout)")
            // Woken, the straggler is told to stop (or its late result is refused).
            let start = SegmentStart(index: 0, worker: victim.name,
                                     line: "job=\(id) segment=\(segment.plan.index) attempt=\(segment.attempt) output=-")
            let woken = await eventually(within: .seconds(30)) { start?.wokenOutcome(in: victim.process.output) != nil }
            #expect(woken, "\(victim.name) neither stopped its attempt nor was told it was stale\n\(victim.process.output)")
            let (run, _) = try await conclude(
                job: id, in: cluster, output: job.output, wall: wall,
                extra: [("asleep_s", String(format: "%.1f", RunFigures.seconds(finishedAsleep))), ("stops_aimed", "\(aimed)"),
                        ("victim", start?.wokenOutcome(in: victim.process.output) ?? "no-sign")])
            figures.record(run, logs: cluster.logs)
            try await cluster.stop()
        }
        figures.finish()
    }

    // MARK: - 5. The spool full

    @Test("spool full (a 3 MB tmpfs): the job fails with a clear reason or waits; nothing corrupt committed or written",
          .enabled(if: TmpfsMount.isAvailable,
                   "spool-full skipped: mounting a tmpfs needs root (CAP_SYS_ADMIN), which this process lacks"))
    func spoolFull() async throws {
        var figures = ScenarioFigures("spool-full")
        for _ in 0..<FaultRuns.count {
            let spool = try TmpfsMount.mount(bytes: 3 << 20)
            try await withCleanup({ spool.unmount() }) {
                // Room for a segment or two (each is about 100 kB), then no more.
                try spool.fill(leaving: 250 << 10)
                let cluster = try await LocalCluster.start(workers: 3, leaseSeconds: nil, spool: spool.path)
                let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("spool-full.mp4"))
                let id = try await job.id()
                // While the job runs, every segment the store calls done is checked on disk: its
                // SHA-256 (sha256sum, not ours) is the one recorded and it ends with the end marker.
                let auditor = SpoolAuditor(cluster: cluster, job: id)
                let auditing = Task { await auditor.run() }
                let ended = await eventually(within: .seconds(240)) { !job.isRunning }
                var behaviour = ended ? "completed" : "waited-then-completed"
                if !ended {
                    // It waits for space: give it some; it must then finish, exactly.
                    try spool.empty()
                }
                let (result, wall) = await job.finish(within: .seconds(300))
                auditing.cancel()
                let audit = await auditing.value
                #expect(audit.corrupt.isEmpty,
                        "segments committed whose file is not what was recorded: \(audit.corrupt)")
                #expect(audit.verified >= 1, "no committed segment was ever checked: the audit tested nothing")
                let outcome: OutputCheck?
                switch result.status {
                case 0:
                    outcome = try await OutputCheck.of(job.output)  // asserted in conclude
                case 1:
                    behaviour = "failed"
                    outcome = nil
                    let words = ["No space left on device", "spool is full", "free space", "disk full"]
                    #expect(words.contains { result.stderr.localizedCaseInsensitiveContains($0) },
                            "the failure does not say the spool is full: \(result.stderr)")
                    #expect(!FileManager.default.fileExists(atPath: job.output), "a failed job left an output")
                    #expect(files(in: cluster.outputs).isEmpty, "partial outputs left: \(files(in: cluster.outputs))")
                default:
                    outcome = nil
                    Issue.record("submit exited \(result.status): \(result.stderr)\n\(cluster.logs)")
                }
                let reason = result.stderr.split(separator: "\n").last { $0.contains("failed:") }.map(String.init) ?? ""
                var (run, _) = try await conclude(
                    job: id, in: cluster, output: outcome == nil ? nil : job.output, wall: wall,
                    extra: [("behaviour", behaviour), ("segments_verified", "\(audit.verified)"),
                            ("corrupt_committed", "\(audit.corrupt.count)"),
                            ("space_in_reason", reason.contains("No space left on device") ? "yes" : "no")])
                // With room again, the same cluster does the job.
                if FileManager.default.fileExists(atPath: spool.path.appendingPathComponent("ballast").path) {
                    try spool.empty()
                }
                let again = try await FaultJob.submit(to: cluster, output: cluster.outputPath("spool-freed.mp4"))
                let (second, _) = await again.finish(within: .seconds(300))
                #expect(second.status == 0, "after freeing space: \(second.stderr)\n\(cluster.logs)")
                let secondCheck = try await OutputCheck.of(again.output)
                #expect(secondCheck.exact, "after freeing space: \(secondCheck)")
                let recovered = second.status == 0 && secondCheck.exact
                run.extra.append(("after_space_freed", recovered ? "completed-exact" : "no"))
                figures.record(run, logs: cluster.logs)
                try await cluster.stop()
            }
        }
        figures.finish()
    }

    // MARK: - 6. Garbage on both ports

    @Test("garbage bytes and malformed frames on both ports during a job: the job is exact, the coordinator stays up")
    func garbage() async throws {
        var figures = ScenarioFigures("garbage")
        for runIndex in 0..<FaultRuns.count {
            let cluster = try await LocalCluster.start(workers: 3, leaseSeconds: nil)
            let pid = cluster.coordinator.process.pid
            // Garbage from before the job until after it, round after round.
            let garbage = GarbageLoop(workers: cluster.coordinator.workers, api: cluster.coordinator.api,
                                      seed: UInt64(runIndex) << 32)
            #expect(await eventually(within: .seconds(60)) { cluster.coordinator.output.contains("dropped") },
                    "the first garbage reached no decoder")
            let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("garbage.mp4"))
            let id = try await job.id()
            garbage.aim(at: id)
            _ = await eventually(within: .seconds(600)) { !job.isRunning }
            let jobEnded = ContinuousClock.now
            let rounds = try await garbage.stop()
            let overlapping = rounds.filter { $0.started < jobEnded && $0.ended > job.started }.count
            let tally = rounds.reduce(into: Garbage.Tally()) { total, round in
                total.tcpConnections += round.tally.tcpConnections
                total.tcpBytes += round.tally.tcpBytes
                total.frames += round.tally.frames
            }
            let (result, wall) = await job.finish(within: .seconds(600))
            #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
            #expect(overlapping >= 1, "no garbage round overlapped the job")
            // Still the same process, and still answering.
            #expect(cluster.coordinator.process.isRunning && cluster.coordinator.process.pid == pid,
                    "the coordinator died\n\(cluster.coordinator.output.suffix(4000))")
            let status = try await SpliceProcess.run(["status", id, "--coordinator", cluster.coordinator.api])
            #expect(status.status == 0, "splice status after the garbage: \(status.stderr)")
            #expect(cluster.workers.allSatisfy { $0.process.isRunning }, "a worker died")
            // The garbage reached the decoders (and was refused there), on both ports.
            let log = cluster.coordinator.output
            for reason in ["garbled", "wrong-protocol", "unsupported-version", "unknown-type", "invalid-body", "oversized"] {
                #expect(log.contains(#"msg="message dropped" reason=\#(reason)"#),
                        "worker port: no \(reason) drop logged")
                #expect(log.contains(#"msg="API request dropped" reason=\#(reason)"#),
                        "API port: no \(reason) drop logged")
            }
            let (run, _) = try await conclude(
                job: id, in: cluster, output: job.output, wall: wall,
                extra: [("garbage_rounds", "\(rounds.count)"), ("rounds_during_job", "\(overlapping)"),
                        ("tcp_connections", "\(tally.tcpConnections)"),
                        ("tcp_bytes", "\(tally.tcpBytes)"), ("zmq_frames", "\(tally.frames)"),
                        ("drops_logged", "\(log.components(separatedBy: "dropped\"").count - 1)"),
                        ("coordinator_up", cluster.coordinator.process.isRunning ? "yes" : "no")])
            figures.record(run, logs: cluster.logs)
            try await cluster.stop()
        }
        figures.finish()
    }

    // MARK: - 7. Bad jobs

    @Test("a bad job is refused promptly (submit --wait exits 1 naming the problem) and the coordinator keeps serving",
          arguments: BadJob.allCases)
    func badJob(_ bad: BadJob) async throws {
        var figures = ScenarioFigures("bad-job-\(bad.rawValue)")
        let cluster = try await LocalCluster.start(workers: 2)
        let pid = cluster.coordinator.process.pid
        let (input, output) = try await bad.paths(outputs: cluster.outputs)
        let job = try await FaultJob.submit(to: cluster, output: output, input: input)
        // A coordinator that dies on the job leaves submit --wait retrying forever: stop waiting then.
        _ = await eventually(within: .seconds(60)) { !job.isRunning || !cluster.coordinator.process.isRunning }
        let (result, wall) = await job.finish(within: .seconds(5))
        let reason = result.stderr.split(separator: "\n").last { $0.contains("failed") || $0.contains("error") }
            .map(String.init) ?? result.stderr
        #expect(result.status == 1,
                "submit --wait of a bad job (\(bad.rawValue)) exited \(result.status): \(result.stderr)")
        #expect(wall < .seconds(30), "refused after \(wall), not promptly")
        #expect(reason.contains(bad.named(input: input, output: output)),
                "the reason does not name \(bad.named(input: input, output: output)): \(reason)")
        #expect(bad.problemWords.contains { reason.localizedCaseInsensitiveContains($0) },
                "the reason does not say what is wrong (\(bad.problemWords)): \(reason)")
        #expect(!FileManager.default.fileExists(atPath: output), "a bad job left an output")
        var leased = 0
        var ledgerFigures: RunFigures?
        if let id = SpliceProcess.submittedJob(in: result.stderr) {
            let (run, ledger) = try await conclude(job: id, in: cluster, output: nil, wall: wall)
            leased = ledger.attempts
            ledgerFigures = run
            #expect(ledger.job.state == .failed, "\(ledger)")
            // An operator reading the coordinator's log sees the job fail, with its reason.
            let failedLine = await eventually(within: .seconds(10)) {
                cluster.coordinator.output.split(separator: "\n").contains {
                    $0.contains("msg=\"job failed\"") && $0.contains(id)
                }
            }
            #expect(failedLine, "no 'job failed' log line for \(id)")
            if bad.isKnownBeforeEncoding {
                #expect(leased == 0, "\(leased) segments were encoded for a job that could be refused up front")
            }
        }
        // The coordinator is the same process, and does a good job next.
        guard cluster.coordinator.process.isRunning && cluster.coordinator.process.pid == pid else {
            Issue.record("the coordinator died on a bad job\n\(cluster.coordinator.output.suffix(3000))")
            var run = ledgerFigures ?? RunFigures(outcome: "not-submitted", wall: wall)
            run.extra += [("exit", "\(result.status)"), ("segments_leased", "\(leased)"), ("coordinator_up", "no")]
            figures.record(run, logs: cluster.logs)
            return
        }
        let good = try await FaultJob.submit(to: cluster, output: cluster.outputPath("after-\(bad.rawValue).mp4"))
        let (next, _) = await good.finish(within: .seconds(120))
        #expect(next.status == 0, "a good job after the bad one: \(next.stderr)\n\(cluster.logs)")
        let goodCheck = try await OutputCheck.of(good.output)
        #expect(goodCheck.exact, "the good job after the bad one: \(goodCheck)")
        var run = ledgerFigures ?? RunFigures(outcome: "not-submitted", wall: wall)
        run.extra += [("exit", "\(result.status)"), ("segments_leased", "\(leased)"),
                      ("coordinator_up", "yes"),
                      ("next_job", next.status == 0 && goodCheck.exact ? "completed-exact" : "exit-\(next.status)"),
                      ("reason", String(reason.prefix(160)))]
        figures.record(run, logs: cluster.logs)
        try await cluster.stop()
    }

    enum BadJob: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The first 40 % of an MP4 whose index (moov) is at the end: no index at all.
        case truncatedInput = "truncated-input"
        /// The first 60 % of an MP4 with its index first (faststart): the index promises media
        /// data that is not there.
        case truncatedMediaData = "truncated-media-data"
        case missingInput = "missing-input"
        case missingOutputFolder = "missing-output-folder"
        /// The output's "folder" is a regular file.
        case outputParentIsFile = "output-parent-is-a-file"
        /// A folder nobody can create files in, root included: /proc.
        case unwritableOutputFolder = "unwritable-output-folder"

        var testDescription: String { rawValue }

        /// Whether the coordinator can know before encoding anything: everything but media data
        /// that is missing behind a valid index (found only when that range is decoded).
        var isKnownBeforeEncoding: Bool { self != .truncatedMediaData }

        /// Words of which the reason must contain one.
        var problemWords: [String] {
            switch self {
            case .truncatedInput: ["moov atom not found", "truncated", "corrupt", "damaged", "incomplete"]
            case .truncatedMediaData: ["truncated", "corrupt", "damaged", "undecodable", "incomplete", "partial"]
            case .missingInput: ["no such file", "does not exist", "not found"]
            case .missingOutputFolder: ["does not exist", "no such"]
            case .outputParentIsFile: ["not a folder", "not a directory", "is a file"]
            case .unwritableOutputFolder: ["not writable", "cannot write", "read-only", "permission"]
            }
        }

        /// What the reason must name: the input, or the output's folder.
        func named(input: String, output: String) -> String {
            switch self {
            case .truncatedInput, .truncatedMediaData, .missingInput: input
            default: URL(fileURLWithPath: output).deletingLastPathComponent().path
            }
        }

        /// The job's input and output paths (inputs made here).
        func paths(outputs: URL) async throws -> (input: String, output: String) {
            let good = try await FaultMedia.source()
            let folder = Fixtures.temporaryDirectory("bad-job")
            let output = outputs.appendingPathComponent("\(rawValue).mp4").path
            switch self {
            case .truncatedInput:
                let truncated = folder.appendingPathComponent("truncated.mp4")
                return (try Self.prefix(of: good, fraction: 0.4, to: truncated), output)
            case .truncatedMediaData:
                let faststart = folder.appendingPathComponent("faststart.mp4").path
                try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-i", good, "-c", "copy",
                                                        "-movflags", "+faststart", faststart])
                return (try Self.prefix(of: faststart, fraction: 0.6, to: folder.appendingPathComponent("cut.mp4")),
                        output)
            case .missingInput:
                return (folder.appendingPathComponent("no-such-input.mp4").path, output)
            case .missingOutputFolder:
                return (good, folder.appendingPathComponent("no-such-folder/out.mp4").path)
            case .outputParentIsFile:
                let file = folder.appendingPathComponent("a-file")
                try Data("not a folder\n".utf8).write(to: file)
                return (good, file.appendingPathComponent("out.mp4").path)
            case .unwritableOutputFolder:
                return (good, "/proc/splice-fault-\(getpid()).mp4")
            }
        }

        private static func prefix(of path: String, fraction: Double, to destination: URL) throws -> String {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            try data.prefix(Int(Double(data.count) * fraction)).write(to: destination)
            return destination.path
        }
    }
}

// MARK: - Helpers

/// Regular files under `folder`, recursively (hidden temporary files included).
private func files(in folder: URL) -> [String] {
    let walker = FileManager.default.enumerator(atPath: folder.path)
    var found: [String] = []
    while let name = walker?.nextObject() as? String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path, isDirectory: &isDirectory),
           !isDirectory.boolValue {
            found.append(name)
        }
    }
    return found
}

/// Checks, while a job runs, that every segment the store calls done is on disk as recorded.
actor SpoolAuditor {
    struct Audit: Sendable {
        var verified = 0
        var corrupt: [String] = []
    }

    private let cluster: LocalCluster
    private let job: String
    private var checked = Set<Int64>()
    private var audit = Audit()

    init(cluster: LocalCluster, job: String) {
        self.cluster = cluster
        self.job = job
    }

    /// Audits every 100 ms until cancelled, then once more; returns what it found.
    func run() async -> Audit {
        while !Task.isCancelled {
            await pass()
            try? await Task.sleep(for: .milliseconds(100))
        }
        await pass()
        return audit
    }

    private func pass() async {
        guard let segments = try? await cluster.segments(of: job) else { return }
        for segment in segments where segment.state == .done && !checked.contains(segment.id) {
            guard let path = segment.outputPath, let checksum = segment.checksum else {
                audit.corrupt.append("segment \(segment.plan.index): done without an output or checksum")
                checked.insert(segment.id)
                continue
            }
            switch await SegmentFileCheck.check(path: path, checksum: checksum.description) {
            case .intact:
                audit.verified += 1
                checked.insert(segment.id)
            case .damaged(let why):
                audit.corrupt.append("segment \(segment.plan.index) (\(path)): \(why)")
                checked.insert(segment.id)
            case .gone:
                break  // the job ended and its spool folder was removed: nothing left to check
            }
        }
    }
}

/// A committed segment file as an independent reader sees it: `sha256sum` of the whole file
/// against the recorded checksum, and the segment format's end marker (`SPLSEND\n`) last.
enum SegmentFileCheck {
    enum Verdict: Sendable {
        case intact
        case damaged(String)
        case gone
    }

    static func check(path: String, checksum: String) async -> Verdict {
        guard let data = try? await ExternalTool.offPool({ try Data(contentsOf: URL(fileURLWithPath: path)) }) else {
            return .gone
        }
        guard data.suffix(8) == Data("SPLSEND\n".utf8) else { return .damaged("no end marker (\(data.count) bytes)") }
        guard let sum = try? await ExternalTool.check("sha256sum", [path]) else { return .gone }
        let digest = "sha256:" + String(sum.text.prefix(64))
        return digest == checksum ? .intact : .damaged("sha256sum \(digest), recorded \(checksum)")
    }
}
