import Foundation
import SpliceCore
import SpliceJSON
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
@testable import SpliceCoordinator


private let peer = WirePeer(routingID: RoutingID("w:ops"), publicKey: nil)
private let identity = WorkerIdentity(peer: peer)!

private let opsJob = JobID(UUID())

private func opsAttempt(_ segment: Int, token: LeaseToken = LeaseToken(UUID())) -> SegmentAttempt {
    SegmentAttempt(job: opsJob, segment: segment, attempt: 1, leaseToken: token)
}

private func complete(_ attempt: SegmentAttempt, milliseconds: Int = 1500, frames: Int? = 30) -> Complete {
    Complete(attempt: attempt, outputPath: "/spool/x", checksum: .filled(0),
             sizeBytes: 10, encodeMilliseconds: milliseconds, videoFrames: frames)
}

/// The coordinator's in-memory figures, fed the events the shell, the reaper and the outbox see.
@Suite("Coordinator metrics")
struct CoordinatorMetricsTests {
    @Test("a segment counts once, when its first COMPLETE is committed; resends and stale results do not")
    func completions() {
        let metrics = CoordinatorMetrics()
        let done = WorkerResult.complete(complete(opsAttempt(0), milliseconds: 2500))
        metrics.committed(done, outcome: .completed(jobReadyToStitch: false))
        metrics.committed(done, outcome: .alreadyCompleted)
        metrics.committed(.complete(complete(opsAttempt(1))), outcome: .staleLease)
        #expect(metrics.segmentsCompleted.value() == 1)
        #expect(metrics.encodeSeconds.snapshot()?.count == 1)
        #expect(metrics.encodeSeconds.snapshot()?.sum == 2.5)
    }

    @Test("failed attempts by reason: FAIL codes (unknown ones as other), hand-backs, releases, expiries")
    func failures() {
        let metrics = CoordinatorMetrics()
        let fail = { (code: String) in
            WorkerResult.fail(Fail(attempt: opsAttempt(0), code: Fail.Code(rawValue: code), reason: "r", retryable: true))
        }
        metrics.committed(fail("encode-failed"), outcome: .recorded(.willRetry(at: Date())))
        metrics.committed(fail("spool-unwritable"), outcome: .recorded(.willRetry(at: Date())))
        metrics.committed(fail("made-up-code"), outcome: .recorded(.jobFailed(segmentState: .dead)))
        // Transfer mode's two codes were once missing from a hand-copied list and counted as `other`.
        metrics.committed(fail("transfer-failed"), outcome: .recorded(.willRetry(at: Date())))
        metrics.committed(fail("scratch-full"), outcome: .recorded(.willRetry(at: Date())))
        metrics.committed(fail("encode-failed"), outcome: .staleLease)
        metrics.abandoned(reason: "the worker did not accept the assignment within 5.0 seconds", recorded: true)
        metrics.abandoned(reason: "the assignment could not be delivered: gone", recorded: true)
        metrics.abandoned(reason: "the worker registered again without it", recorded: false)
        metrics.takenBack(3, reason: AttemptFailure.leaseExpired)
        metrics.takenBack(2, reason: AttemptFailure.workerLost)
        let failed = metrics.attemptsFailed
        #expect(failed.value(["encode-failed"]) == 1)
        #expect(failed.value(["spool-unwritable"]) == 1)
        #expect(failed.value(["other"]) == 1)
        #expect(failed.value(["transfer-failed"]) == 1)
        #expect(failed.value(["scratch-full"]) == 1)
        #expect(failed.value(["not-accepted"]) == 1)
        #expect(failed.value(["undeliverable"]) == 1)
        #expect(failed.value(["reregistered"]) == 0)
        #expect(failed.value(["lease-expired"]) == 3)
        #expect(failed.value(["worker-lost"]) == 2)
        #expect(metrics.leaseExpiries.value() == 3)
        #expect(AttemptFailure.reason(abandoned: "the worker left before its assignment was sent") == "worker-lost")
        #expect(AttemptFailure.reason(abandoned: "something new") == "abandoned")
    }

    @Test("every FAIL code this build knows counts under its own label, none as other")
    func everyFailCode() {
        let metrics = CoordinatorMetrics()
        for code in Fail.Code.allCases {
            let fail = Fail(attempt: opsAttempt(0), code: code, reason: "r", retryable: true)
            metrics.committed(.fail(fail), outcome: .recorded(.willRetry(at: Date())))
        }
        #expect(Fail.Code.allCases.count == Set(Fail.Code.allCases).count)
        for code in Fail.Code.allCases {
            #expect(metrics.attemptsFailed.value([code.rawValue]) == 1, "\(code)")
        }
        #expect(metrics.attemptsFailed.value(["other"]) == 0)
    }

    @Test("dispatch latency runs from the claim to its ASSIGN going out, once per attempt")
    func dispatchLatency() {
        let metrics = CoordinatorMetrics()
        let issued = ContinuousClock.now
        let leased = opsAttempt(4)
        let assignment = Assignment(attempt: leased, outputPath: "/spool/x", spec: JSONPayload(.object([:])))
        metrics.claimed([identity: [assignment]], issued: issued)
        let assign = Assign(attempt: leased, outputPath: "/spool/x", leaseMilliseconds: 1000,
                            progressIntervalMilliseconds: 100, spec: JSONPayload(.object([:])))
        metrics.sent([.heartbeat(Heartbeat()), .assign(assign)], at: issued + .milliseconds(20))
        metrics.sent([.assign(assign)], at: issued + .seconds(5))  // sent twice: counted once
        let latency = metrics.dispatchLatency.snapshot()
        #expect(latency?.count == 1)
        #expect(latency.map { abs($0.sum - 0.02) < 1e-9 } == true)
    }

    @Test("frames per second over the last minute, each COMPLETE counted once however often it is resent")
    func framesPerSecond() {
        let metrics = CoordinatorMetrics()
        let start = ContinuousClock.now
        let message = { (body: Complete) in Received<WorkerMessage>.message(Envelope(.complete(body)), from: peer) }
        metrics.received([.message(Envelope(.heartbeat(Heartbeat())), from: peer)], at: start)
        #expect(metrics.framesPerSecond(identity, now: start + .seconds(10)) == nil)  // no frame counts yet
        let first = complete(opsAttempt(0, token: LeaseToken(UUID())), frames: 300)
        metrics.received([message(first)], at: start + .seconds(10))
        metrics.received([message(first)], at: start + .seconds(11))  // a resend
        metrics.received([message(complete(opsAttempt(1, token: LeaseToken(UUID())), frames: 300))], at: start + .seconds(20))
        #expect(metrics.framesPerSecond(identity, now: start + .seconds(20)) == 30)  // 600 frames in 20 s
        #expect(metrics.framesPerSecond(identity, now: start + .seconds(75)) == 5)   // 300 in the last 60 s
        let old = complete(opsAttempt(2, token: LeaseToken(UUID())), frames: nil)
        let otherPeer = WirePeer(routingID: RoutingID("w:old"), publicKey: nil)
        metrics.received([.message(Envelope(.complete(old)), from: otherPeer)], at: start)
        #expect(metrics.framesPerSecond(WorkerIdentity(peer: otherPeer)!, now: start + .seconds(30)) == nil)
    }

    @Test("slots by state: busy, then idle, quarantined or unavailable by the session")
    func slotStates() {
        var session = WorkerSessionSnapshot(identity: identity, workerID: UUID(), name: "w", slots: 4, running: 2,
                                            active: true, silent: false)
        let held = [LiveWorker.Attempt(attempt: opsAttempt(0), fraction: 0.5, reported: false),
                    LiveWorker.Attempt(attempt: opsAttempt(1), fraction: 1, reported: true)]
        #expect(LiveWorker(session: session, attempts: held).slotStates == ["busy": 1, "idle": 3])
        session.quarantineRemaining = .seconds(10)
        #expect(LiveWorker(session: session, attempts: held).slotStates == ["busy": 1, "quarantined": 3])
        session.silent = true
        #expect(LiveWorker(session: session, attempts: held).slotStates == ["busy": 1, "unavailable": 3])
    }
}

/// The status page as HTML: everything a client or worker named is escaped.
@Suite("Status page")
struct StatusPageTests {
    static let hostile = #"<script>alert("x")</script> & 'y' <img src=x onerror=alert(1)>"#

    static func report() -> StatusReport {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let summary = JobRepository.JobSummary(
            id: UUID(), input: "/media/" + hostile + ".mov", output: "/out/" + hostile + ".mp4", state: .running,
            priority: 0, segmentsTotal: 10, segmentsDone: 4, failedAttempts: 2, error: nil, waiting: hostile,
            createdAt: now - 120, startedAt: now - 100, finishedAt: nil)
        let failed = JobRepository.JobSummary(
            id: UUID(), input: "/a", output: "/b", state: .failed, priority: 0, segmentsTotal: 0, segmentsDone: 0,
            failedAttempts: 0, error: "stitching failed: " + hostile, waiting: nil, createdAt: now - 600,
            startedAt: nil, finishedAt: now - 60)
        let session = WorkerSessionSnapshot(
            identity: .connection(RoutingID(hostile)), workerID: UUID(), name: hostile, slots: 2, running: 1,
            active: true, silent: false, quarantineRemaining: .seconds(7), quarantineReason: hostile)
        let live = LiveWorker(session: session, attempts: [
            LiveWorker.Attempt(attempt: SegmentAttempt(job: JobID(UUID()), segment: 3, attempt: 1,
                                                       leaseToken: LeaseToken(UUID())), fraction: 0.25, reported: false),
        ])
        return StatusReport(
            generatedAt: now, version: "0.1.0", coordinator: "running", uptimeSeconds: 3725, storeUp: true,
            storeError: nil, pendingSegments: 6, leasedSegments: 1,
            jobs: [StatusReport.job(summary, runningProgress: RunningProgress(segments: 1), now: now),
                   StatusReport.job(failed, runningProgress: RunningProgress(), now: now)],
            workers: [StatusReport.worker(live, framesPerSecond: 41.5)])
    }

    @Test("progress, ETA and state names come from the store's figures")
    func figures() throws {
        let job = try #require(Self.report().jobs.first)
        #expect(job.fraction == 0.5)  // (4 done + 1 running) / 10
        #expect(job.etaSeconds == 100)  // 100 s for the first half
        #expect(job.failedAttempts == 2)
        #expect(Self.report().jobs.last?.state == .failed)
        #expect(Self.report().workers.first?.status == "quarantined")
        #expect(Self.report().workers.first?.busy == 1)
    }

    @Test("with planned costs, progress is weighted by them; backups are shown")
    func costWeighted() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        // 4 of 10 segments done, but they are the expensive ones: 60 of 100 units of work.
        let summary = JobRepository.JobSummary(
            id: UUID(), input: "/a", output: "/b", state: .running, priority: 0, segmentsTotal: 10,
            segmentsDone: 4, failedAttempts: 0,
            progress: JobProgress(costTotal: 100, costDone: 60, backupsStarted: 1, backupsWon: 1), error: nil,
            waiting: nil, createdAt: now - 120, startedAt: now - 70, finishedAt: nil)
        // One running segment of cost 20 half done (and its backup, less far, counted once).
        let job = StatusReport.job(summary, runningProgress: RunningProgress([(3, 0.5, 20), (3, 0.25, 20)]), now: now)
        #expect(job.fraction == 0.7)
        #expect(job.etaSeconds == 30)  // 70 s for 70 %
        #expect(job.backupsStarted == 1 && job.backupsWon == 1)
        var report = Self.report()
        report.jobs = [job]
        #expect(StatusPage.render(report, nonce: "n").contains("backups: 1 started, 1 won"))
    }

    @Test("every name is escaped; the page's own style and script are its only ones, and they carry the nonce")
    func escaping() {
        let html = StatusPage.render(Self.report(), nonce: "n0nce")
        #expect(!html.contains("<script>alert") && !html.contains("<img"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39; &lt;img src=x onerror=alert(1)&gt;"))
        #expect(html.components(separatedBy: "<script").count == 2)
        #expect(html.contains(#"<script nonce="n0nce">"#) && html.contains(#"<style nonce="n0nce">"#))
        #expect(html.contains("stitching failed: &lt;script&gt;"))
        #expect(html.contains("waiting: &lt;script&gt;"))
        #expect(html.contains("41.5"))
        #expect(html.contains("up 1h 02m"))
        let policy = StatusPage.headers(nonce: "n0nce").first { $0.name == "Content-Security-Policy" }?.value ?? ""
        #expect(policy.contains("script-src 'nonce-n0nce'") && policy.contains("default-src 'none'"))
        #expect(StatusPage.escape("a\u{1}b") == "a\u{FFFD}b")
    }

    @Test("each worker's protocol version is on the page and in its JSON, and in GET /v1/workers")
    func protocolVersion() throws {
        var report = Self.report()
        var older = try #require(report.workers.first)
        older.protocolVersion = 2
        report.workers = [older]
        #expect(StatusPage.render(report, nonce: "n").contains("protocol 2</div>"))
        #expect(report.json().contains(#""protocolVersion" : 2"#))
        let info = WorkerInfo(publicKey: try CurveKeyPair.generate().publicKey, name: "w", enrolled: true,
                              connected: true, slots: 1, running: 0, lastSeenAtMilliseconds: nil, protocolVersion: 2)
        #expect(WorkerResource(info).protocolVersion == 2)
    }

    @Test("durations read like a clock")
    func durations() {
        #expect(StatusPage.duration(0) == "0s")
        #expect(StatusPage.duration(59) == "59s")
        #expect(StatusPage.duration(200) == "3m 20s")
        #expect(StatusPage.duration(7500) == "2h 05m")
        #expect(StatusPage.duration(200_000) == "2d 7h")
    }

    @Test("/status.json is the same report")
    func json() throws {
        let decoded = try JSONSerialization.jsonObject(with: Data(Self.report().json().utf8)) as? [String: Any]
        #expect((decoded?["jobs"] as? [[String: Any]])?.first?["input"] as? String == "/media/" + Self.hostile + ".mov")
        #expect((decoded?["workers"] as? [[String: Any]])?.first?["framesPerSecond"] as? Double == 41.5)
    }
}
