import Foundation
import SpliceWire
import SpliceTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Transfer mode with real processes: `splice coordinator`, a `splice worker` without --spool in
// a mount namespace of its own whose /tmp is an empty tmpfs (it cannot see the source, the spool
// or anything else the test made), and `splice submit --wait`. The oracle is `splice transcode`
// of the same clip at the same settings, decoded by ffmpeg (framemd5 + audio sample count);
// libx264 is bit-repeatable at `ultrafast` only (docs/media.md, Known limits).
@Suite("Transfer mode: workers without the shared spool", .timeLimit(.minutes(8)))
struct TransferModeTests {
    static let flags = EndToEndMedia.flags(preset: "ultrafast")

    /// `splice transcode` of the end-to-end clip at `ultrafast`, once per test process.
    static let reference = Task { () throws -> Digests in
        let output = Fixtures.temporaryDirectory("transfer-reference").appendingPathComponent("transcode.mp4").path
        let result = try await SpliceProcess.run(["transcode", try await EndToEndMedia.source(), output, "--jobs", "2"]
                                                 + flags, timeout: .seconds(300))
        guard result.status == 0 else { throw TestFailure("splice transcode failed: \(result.stderr)") }
        return try await Digests(of: output)
    }

    @Test("a worker that sees none of the coordinator's files encodes a whole job, exactly; then beside a spool worker",
          .enabled(if: geteuid() == 0, "needs root: the worker runs in its own mount namespace (unshare -m)"))
    func isolatedTransferWorker() async throws {
        // The control: inside such a namespace the source is not there, while the binary is.
        let source = try await EndToEndMedia.source()
        let splice = try SpliceBinary.executable().path
        let probe = MountIsolation.testFiles(mustNotSee: [source]).wrapper
        let seen = try await ExternalTool.run(probe[0], Array(probe.dropFirst()) + ["/bin/sh", "-c", "test -x \"$0\"", splice])
        #expect(seen.status == 0, "in the namespace the source is visible or the binary is not: \(seen.stderr)")

        var cluster = try await LocalCluster.start(workers: 0)
        let isolated = try await cluster.addTransferWorker(named: "t0", isolated: true, mustNotSee: [source])
        #expect(isolated.process.output.contains("storage=transfer"), "\(isolated.process.output)")

        // Every segment on the isolated worker: it can only have read the excerpts it fetched.
        let first = cluster.outputPath("transfer.mp4")
        let job = try await submit(first, on: cluster)
        let reference = try await Self.reference.value
        #expect(try await Digests(of: first) == reference, "transfer-mode output differs from splice transcode")
        let isolatedID = try #require(try await cluster.workerID(named: "t0"))
        let done = try await cluster.segmentsDone(job: job)
        #expect(done.count == EndToEndMedia.segments)
        #expect(done.values.allSatisfy { $0 == isolatedID }, "a segment was done by another worker")
        #expect(isolated.process.output.components(separatedBy: "file received").count - 1 >= EndToEndMedia.segments,
                "the worker did not fetch an excerpt per segment\n\(isolated.process.output)")

        // A shared-spool worker beside it: the coordinator serves both kinds at once.
        try await cluster.addSpoolWorker(named: "s0")
        let second = cluster.outputPath("mixed.mp4")
        let mixed = try await submit(second, on: cluster)
        #expect(try await Digests(of: second) == reference, "mixed-mode output differs from splice transcode")
        #expect(try await cluster.segmentsDone(job: mixed).count == EndToEndMedia.segments)

        // Nothing of transfer mode left behind: no excerpt in the spool, no scratch file.
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: cluster.spool.path)
            .filter { ($0 as NSString).lastPathComponent.hasPrefix("x-") || $0.contains(".part") }
        #expect(leftovers.isEmpty, "left in the spool: \(leftovers)")
        #expect(cluster.coordinatorLogs.contains("file received"), "no result was fetched back")

        // `splice workers`: each one's mode; the transfer worker's bytes in and out.
        let listing = try await SpliceProcess.run(["workers", "--coordinator", cluster.coordinator.api],
                                                  timeout: .seconds(60))
        let rows = listing.stdout.split(separator: "\n")
        let transferRow = try #require(rows.first { $0.contains(" t0 ") }, "\(listing.stdout)")
        let spoolRow = try #require(rows.first { $0.contains(" s0 ") }, "\(listing.stdout)")
        #expect(transferRow.contains(" transfer "), "\(transferRow)")
        #expect(!transferRow.contains(" 0.0 MB/"), "no excerpt bytes counted: \(transferRow)")
        #expect(spoolRow.contains(" spool "), "\(spoolRow)")
        try await cluster.stop()
    }

    @Test("a transfer worker SIGKILLed mid-job: its leases expire, another transfer worker redoes them, exactly",
          .enabled(if: geteuid() == 0, "needs root: the workers run in their own mount namespaces (unshare -m)"))
    func transferWorkerKilled() async throws {
        var cluster = try await LocalCluster.start(workers: 0, leaseSeconds: 4)
        let victim = try await cluster.addTransferWorker(named: "t0", isolated: true)
        let output = cluster.outputPath("killed.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + Self.flags)
        #expect(await eventually(within: .seconds(120)) { victim.process.output.contains("segment started") },
                "the worker started nothing\n\(cluster.logs)")
        victim.process.signal(SIGKILL)
        _ = await victim.process.exitStatus()
        try await cluster.addTransferWorker(named: "t1", isolated: true)
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await Self.reference.value), "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments)
        try await cluster.stop()
    }

    @Test("a transfer worker whose --scratch-limit cannot hold an excerpt refuses it; no attempt is spent")
    func scratchLimitRefuses() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        let small = try await cluster.addTransferWorker(named: "t0", isolated: false, extra: ["--scratch-limit", "1000"])
        let output = cluster.outputPath("refused.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + Self.flags)
        #expect(await eventually(within: .seconds(60)) { cluster.coordinatorLogs.contains("code=scratch-full") },
                "no scratch-full refusal\n\(cluster.logs)")
        #expect(small.process.output.contains("--scratch-limit"), "\(small.process.output)")
        // A spool worker takes the job; the refusals cost it nothing.
        try await cluster.addSpoolWorker(named: "s0")
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await Self.reference.value), "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        let spoolID = try #require(try await cluster.workerID(named: "s0"))
        let done = try await cluster.segmentsDone(job: job)
        #expect(done.count == EndToEndMedia.segments)
        #expect(done.values.allSatisfy { $0 == spoolID }, "a segment was done despite the scratch limit")
        let events = try await cluster.events(of: job)
        #expect(events.contains { $0.kind == "segment_returned" }, "no segment was handed back")
        let failures = events.filter { $0.kind == "segment_failed" }
        #expect(failures.isEmpty, "a refusal was counted as a failed attempt: \(failures)")
        try await cluster.stop()
    }

    @Test("the source deleted mid-job, once its excerpts are cut: transfer workers finish the job, exactly",
          .enabled(if: geteuid() == 0, "needs root: the worker runs in its own mount namespace (unshare -m)"))
    func sourceDeletedMidJob() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        try await cluster.addTransferWorker(named: "t0", isolated: true)
        // A copy of its own: the shared clip stays for the other tests.
        let source = Fixtures.temporaryDirectory("doomed").appendingPathComponent("source.mp4")
        try FileManager.default.copyItem(atPath: try await EndToEndMedia.source(), toPath: source.path)
        let output = cluster.outputPath("orphaned.mp4")
        let submit = try SpliceProcess(["submit", source.path, output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + Self.flags)
        #expect(await eventually(within: .seconds(120)) { cluster.coordinatorLogs.contains("source excerpts cut") },
                "the job's excerpts were not cut\n\(cluster.logs)")
        try FileManager.default.removeItem(at: source)
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await Self.reference.value), "output differs from splice transcode")
        try await cluster.stop()
    }

    @Test("the coordinator SIGKILLed mid-job and started again: the transfer worker's results are fetched, exactly",
          .enabled(if: geteuid() == 0, "needs root: the worker runs in its own mount namespace (unshare -m)"))
    func coordinatorKilled() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        try await cluster.addTransferWorker(named: "t0", isolated: true)
        let output = cluster.outputPath("coordinator-killed.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + Self.flags)
        #expect(await eventually(within: .seconds(120)) { EndToEndMedia.segmentsDone(in: submit.stderrText) >= 1 },
                "no progress: \(submit.stderrText)\n\(cluster.logs)")
        cluster.coordinator.signal(SIGKILL)
        _ = await cluster.coordinator.exitStatus()
        try await cluster.restartCoordinator()
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await Self.reference.value), "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments,
                "each segment committed exactly once across the restart")
        try await cluster.stop()
    }

    /// `splice submit --wait` of the clip to `output`; the job id once it has finished.
    private func submit(_ output: String, on cluster: LocalCluster) async throws -> String {
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + Self.flags)
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        return try #require(EndToEndMedia.job(in: result.stderr), "no job id: \(result.stderr)")
    }
}

/// Transfer mode with CURVE on, both daemons in this process: the data endpoint admits the
/// enrolled worker key through the same ZAP domain as the worker endpoint, the excerpts go to that
/// key and the results come back from it.
@Suite("Transfer mode under CURVE", .timeLimit(.minutes(5)))
struct TransferModeCurveTests {
    @Test("an enrolled transfer worker under CURVE encodes a whole job; the output has every source frame")
    func curveJob() async throws {
        let server = try CurveKeyPair.generate()
        let admin = try CurveKeyPair.generate()
        let member = try CurveKeyPair.generate()
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.keys = server
            configuration.adminKeys = [admin.publicKey]
            configuration.dataEndpoint = loopback
        }
        let data = try #require(coordinator.endpoints.data, "no data endpoint bound")
        let context = try WireContext()
        let client = try await TestClient.connect(
            to: coordinator.endpoints.api, curve: .client(keys: admin, serverKey: server.publicKey), context: context)
        _ = try await client.request(.enroll(EnrollWorker(publicKey: member.publicKey, name: "member")))
        let worker = try RunningWorker.start(coordinator: coordinator.endpoints.workers, slots: 2) { configuration in
            configuration.spool = nil
            configuration.dataEndpoint = data
            configuration.curve = (keys: member, serverKey: server.publicKey)
        }
        let source = try await TestMedia.clip(seconds: 3)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("curve.mp4").path
        let job = try await client.submit(source, to: output)
        let status = try await client.wait(for: job, toBe: [.succeeded, .failed], within: .seconds(120))
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        #expect(try await TestMedia.frames(output) == (try await TestMedia.frames(source)))
        guard case .workers(let listed) = try await client.request(.workers(ListWorkers())) else {
            Issue.record("WORKERS did not answer WORKER_LIST")
            return
        }
        let row = try #require(listed.workers.first { $0.publicKey == member.publicKey })
        #expect(row.storage == .transfer)
        #expect((row.bytesIn ?? 0) > 0 && (row.bytesOut ?? 0) > 0, "bytes in/out: \(row)")
        await worker.stop()
        try await coordinator.stop()
    }

    @Test("a coordinator without a data endpoint never welcomes a transfer worker, so it gets no work to fail")
    func noDataEndpoint() async throws {
        let coordinator = try await CoordinatorUnderTest.start()  // dataEndpoint nil
        let worker = try RunningWorker.start(coordinator: coordinator.endpoints.workers) { configuration in
            configuration.spool = nil
            configuration.dataEndpoint = "tcp://127.0.0.1:1"
        }
        let spoolWorker = try RunningWorker.start(coordinator: coordinator.endpoints.workers)
        // The spool worker is welcomed (HELLOs are answered); the transfer worker, saying HELLO every
        // 100 ms all along, never is.
        #expect(await eventually(within: .seconds(30)) { await coordinator.coordinator.sessions().contains { $0.active } })
        try await Task.sleep(for: .seconds(1))
        let sessions = await coordinator.coordinator.sessions()
        #expect(sessions.count == 1, "sessions: \(sessions)")
        await worker.stop()
        await spoolWorker.stop()
        try await coordinator.stop()
    }
}
