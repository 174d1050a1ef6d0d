import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Standby coordinators under faults (docs/coordinator.md, Standby coordinators): two real
// `splice coordinator`s on one database, workers and `splice submit --wait` given both. Part of
// the fault suite (same serialized suite, same checkers and figure lines).

extension FaultScenarioTests {
    /// The coordinators' flags in these scenarios: the default leadership lease (3 s), no backup
    /// attempts (an extra encode here must come from a take-over, nothing else).
    static let failoverFlags = ["--leader-lease-seconds", "3", "--backup-after", "0"]

    // MARK: - 7. The active coordinator paused past its lease

    @Test("the active coordinator SIGSTOPped past its lease: a standby takes over; resumed, the old one stands down without a single write")
    func activeCoordinatorPausedPastLease() async throws {
        var figures = ScenarioFigures("coordinator-paused-past-lease")
        for _ in 0..<FaultRuns.count {
            let database = try await TestPostgres.makeDatabase()
            try await Self.auditWrites(on: database)
            let cluster = try await LocalCluster.start(
                workers: 2, leaseSeconds: nil, database: database, coordinatorFlags: Self.failoverFlags, standbys: 1)
            let (first, firstEpoch) = try #require(try await cluster.activeCoordinator(), "nobody active\n\(cluster.logs)")
            let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("paused-coordinator.mp4"))
            let id = try await job.id()
            _ = await eventually(within: .seconds(120)) {
                (try? await cluster.events(of: id))?.contains { $0.kind == "segment_leased" } ?? false
            }
            let paused = cluster.coordinators[first]
            paused.signal(SIGSTOP)
            let stoppedAt = ContinuousClock.now

            // The standby takes over once the lease has run out, and works: the job moves on.
            var successor: (index: Int, epoch: Int64)?
            _ = await eventually(within: .seconds(30)) {
                successor = try? await cluster.activeCoordinator()
                return successor.map { $0.epoch > firstEpoch } ?? false
            }
            let (next, nextEpoch) = try #require(successor, "no take-over while the active one was stopped\n\(cluster.logs)")
            let takeOver = ContinuousClock.now - stoppedAt
            #expect(next != first && nextEpoch == firstEpoch + 1)
            let working = try await eventually(within: .seconds(60)) {
                try await Self.events(of: id, kinds: ["segment_done"], epoch: nextEpoch, in: cluster) > 0
                    || !job.isRunning
            }
            #expect(working, "the new active coordinator committed nothing\n\(cluster.logs)")

            // Resumed while the job still runs: it finds its lease gone by its own clock.
            paused.signal(SIGCONT)
            let stoodDown = await eventually(within: .seconds(20)) { paused.output.contains("coordinator standing by") }
            #expect(stoodDown, "the resumed coordinator did not stand down\n\(paused.output)")
            let (result, wall) = await job.finish(within: .seconds(300))
            #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")

            // Not a single write of the old epoch after the new one's first, in any coordinator
            // table: the audit trigger saw every row that landed, with its session's epoch.
            let late = try await Self.lateWrites(of: firstEpoch, after: nextEpoch, in: cluster)
            #expect(late.isEmpty, "rows written under epoch \(firstEpoch) after epoch \(nextEpoch) began: \(late)\n\(cluster.logs)")
            let refused = paused.output.split(separator: "\n").filter { $0.contains("no longer the current one") }.count
            let operators = try #require(paused.metrics)
            let pausedActive = await HTTPFetch.get(operators, "/metrics")?.body
                .split(separator: "\n").first { $0.hasPrefix("splice_coordinator_active ") }
            #expect(pausedActive == "splice_coordinator_active 0", "the resumed one says it is active")
            #expect(await HTTPFetch.get(operators, "/readyz")?.status == 503)
            #expect(await HTTPFetch.get(operators, "/healthz")?.status == 200)
            let encodes = Self.encodes(in: cluster)
            let segments = try await cluster.segments(of: id).count
            let (run, _) = try await conclude(
                job: id, in: cluster, output: job.output, wall: wall,
                extra: [("take_over_s", String(format: "%.2f", RunFigures.seconds(takeOver))),
                        ("late_writes", "\(late.count)"), ("refused_writes", "\(refused)"),
                        ("redone", "\(encodes - segments)")])
            figures.record(run, logs: cluster.logs)
            try await cluster.stop()
        }
        figures.finish()
    }

    // MARK: - 8. The active coordinator killed, again and again

    @Test("active coordinator SIGKILL storm: 10 kills during one job, a standby takes over each time; running segments adopted, nothing redone")
    func activeCoordinatorKillStorm() async throws {
        var figures = ScenarioFigures("active-coordinator-kill-storm")
        let kills = 10
        for _ in 0..<FaultRuns.count {
            // One worker: each take-over commits the result it held and leases it one more segment,
            // so the 24 segments outlast ten kills (with two, the job ended after seven).
            var cluster = try await LocalCluster.start(
                workers: 1, leaseSeconds: nil, coordinatorFlags: Self.failoverFlags, standbys: 1)
            let job = try await FaultJob.submit(to: cluster, output: cluster.outputPath("active-kill-storm.mp4"))
            let id = try await job.id()
            var takeOvers: [Duration] = []
            var seen: [String: Int] = [:]
            var (active, epoch) = try #require(try await cluster.activeCoordinator())
            // Dispatching under an epoch: a lease issued under it.
            _ = try await eventually(within: .seconds(120)) {
                try await Self.events(of: id, kinds: ["segment_leased"], epoch: epoch, in: cluster) > 0
            }
            for kill in 1...kills {
                guard job.isRunning, let row = try await cluster.job(id), !row.state.isTerminal else {
                    Issue.record("the job ended after only \(kill - 1) coordinator kills\n\(cluster.logs)")
                    break
                }
                // The worker is stopped inside an encode across the take-over, so it is still
                // running that segment when it meets the new active coordinator (an encode takes a
                // tenth of a second; a take-over seconds): the attempt must be adopted, not re-leased.
                guard let start = await cluster.nextSegmentStart(seen: &seen, within: .seconds(120),
                                                                 giveUp: { !job.isRunning })
                else {
                    Issue.record("no segment started before kill \(kill)\n\(cluster.logs)")
                    break
                }
                let worker = cluster.workers[start.index].process
                worker.signal(SIGSTOP)
                cluster.coordinators[active].signal(SIGKILL)
                let killedAt = ContinuousClock.now
                let status = await cluster.coordinators[active].exitStatus()
                #expect(status?.signalled == true && status?.status == SIGKILL)
                // Back at once, as a standby (the lease it held is still live): it may win the
                // take-over as well as the other one.
                try await cluster.restartCoordinator(at: active)
                // Taken over: the other coordinator holds the next epoch and issues leases (or,
                // with every segment leased already, commits the adopted attempts' results).
                _ = try await eventually(within: .seconds(60)) {
                    (try await cluster.activeCoordinator()).map { $0.epoch > epoch } ?? false
                }
                worker.signal(SIGCONT)
                var successor: (index: Int, epoch: Int64)?
                let dispatching = try await eventually(within: .seconds(60)) {
                    successor = try? await cluster.activeCoordinator()
                    guard let successor, successor.epoch > epoch else { return false }
                    return try await Self.events(of: id, kinds: ["segment_leased", "segment_done"],
                                                 epoch: successor.epoch, in: cluster) > 0
                        || !job.isRunning
                }
                guard dispatching, let successor else {
                    Issue.record("no standby took over after kill \(kill)\n\(cluster.logs)")
                    break
                }
                takeOvers.append(ContinuousClock.now - killedAt)
                (active, epoch) = successor
            }
            let (result, wall) = await job.finish(within: .seconds(600))
            #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
            #expect(result.stdout == "job \(id) succeeded: \(job.output)\n")
            #expect(!result.stderr.lowercased().contains("error"), "submit showed an error: \(result.stderr)")
            #expect(takeOvers.count == kills)
            // Adopted, not redone: each of the job's segments (the 24 of video and the audio tail's)
            // was started once and encoded once, the ten stopped across a take-over included.
            let encodes = Self.encodes(in: cluster), starts = Self.starts(in: cluster)
            let segments = try await cluster.segments(of: id).count
            let events = try await cluster.events(of: id)
            #expect(starts == segments && encodes == segments, """
                \(starts) encodes started and \(encodes) finished for \(segments) segments; \(Self.releasedTwice(events))
                \(cluster.logs)
                """)
            // Leases a killed coordinator claimed but whose ASSIGN never left it: released after the
            // orphan grace and leased again (never encoded, so not redone).
            let released = events.filter { $0.kind == "segment_lease_released" || $0.kind == "segment_lease_expired" }
            let sorted = takeOvers.map(RunFigures.seconds).sorted()
            let (run, _) = try await conclude(
                job: id, in: cluster, output: job.output, wall: wall,
                extra: [("kills", "\(takeOvers.count)"), ("redone", "\(starts - segments)"),
                        ("orphaned_leases", "\(released.count)"),
                        ("take_over_max_s", String(format: "%.2f", sorted.last ?? 0)),
                        ("take_over_median_s", String(format: "%.2f", sorted.isEmpty ? 0 : sorted[sorted.count / 2]))])
            figures.record(run, logs: cluster.logs)
            try await cluster.stop()
        }
        figures.finish()
    }

    // MARK: - Reading the epochs

    /// The events of every segment leased more than once, for a failure message.
    static func releasedTwice(_ events: [JobEvent]) -> String {
        let bySegment = Dictionary(grouping: events.filter { $0.segmentID != nil }, by: { $0.segmentID! })
        return bySegment.filter { $0.value.filter { $0.kind == "segment_leased" }.count > 1 }
            .map { segment, events in
                "segment \(segment): " + events.map { "\($0.kind)(\($0.leaseToken.map { "\($0)".prefix(8) } ?? "-")"
                    + " \($0.detail ?? ""))" }.joined(separator: ", ")
            }.joined(separator: "; ")
    }

    /// The job's events of `kinds` written under `epoch`.
    static func events(of job: String, kinds: [String], epoch: Int64, in cluster: LocalCluster) async throws -> Int {
        let id = try #require(UUID(uuidString: job))
        let rows = try await cluster.repository.client.query("""
            SELECT count(*) FROM job_events WHERE job_id = \(id) AND epoch = \(epoch) AND kind = ANY(\(kinds))
            """)
        return Int(try rows.first?.decode(Int64.self, at: 0) ?? 0)
    }

    /// An independent record of every row a coordinator writes: an AFTER trigger of the test's own
    /// on each fenced table logs the table, the operation and the writing session's epoch into
    /// `test_epoch_writes` — in the same transaction, so only what landed is logged, in the
    /// order the rows were written.
    static func auditWrites(on database: ConnectionConfiguration) async throws {
        try await PostgresConnection.withConnection(database) { connection in
            try await connection.query("""
                CREATE TABLE test_epoch_writes (id bigserial PRIMARY KEY, epoch bigint, tbl text, op text)
                """)
            try await connection.query("""
                CREATE FUNCTION test_epoch_audit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO test_epoch_writes (epoch, tbl, op)
                    VALUES (nullif(current_setting('splice.epoch', true), '')::bigint, TG_TABLE_NAME, TG_OP);
                    RETURN NULL;
                END;
                $$
                """)
            for table in ["jobs", "segments", "job_events", "workers"] {
                try await connection.query("""
                    CREATE TRIGGER \(identifier: table + "_test_audit") AFTER INSERT OR UPDATE OR DELETE
                    ON \(identifier: table) FOR EACH ROW EXECUTE FUNCTION test_epoch_audit()
                    """)
            }
        }
    }

    /// Rows (`table op`) written under `old` after the first one written under `new`.
    static func lateWrites(of old: Int64, after new: Int64, in cluster: LocalCluster) async throws -> [String] {
        let rows = try await cluster.repository.client.query("""
            SELECT tbl || ' ' || op FROM test_epoch_writes
            WHERE epoch = \(old) AND id > (SELECT min(id) FROM test_epoch_writes WHERE epoch = \(new))
            ORDER BY id
            """)
        return try rows.map { try $0.decode(String.self, at: 0) }
    }

    /// Encodes the workers finished (`segment encoded`), the killed and replaced ones included.
    static func encodes(in cluster: LocalCluster) -> Int { lines(#"msg="segment encoded""#, in: cluster) }

    /// Encodes the workers started (`segment started`).
    static func starts(in cluster: LocalCluster) -> Int { lines(#"msg="segment started""#, in: cluster) }

    private static func lines(_ text: String, in cluster: LocalCluster) -> Int {
        (cluster.retiredWorkers + cluster.workers).map { worker in
            worker.process.output.split(separator: "\n").filter { $0.contains(text) }.count
        }.reduce(0, +)
    }
}
