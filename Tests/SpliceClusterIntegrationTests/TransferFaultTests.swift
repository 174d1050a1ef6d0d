import Foundation
import SpliceTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Transfer mode's faults with real processes (`splice coordinator`, `splice worker` without
// --spool, `splice submit --wait`). The network's faults are made by a ``FaultProxy`` between a
// worker and the coordinator's data endpoint: it holds back the rest of a CHUNK half-way through
// (so a kill lands exactly mid-download or mid-upload), flips a bit in one (a damaged chunk), or
// cuts the connection in the middle of one.
// Then a worker's scratch disk really full, and a source deleted before its excerpts are cut.
// Each job either finishes with the output `splice transcode` writes (frame MD5s, audio samples)
// or fails with the reason; nothing half-written is left or used.
@Suite("Transfer mode under faults", .timeLimit(.minutes(6)))
struct TransferFaultTests {
    @Test("a transfer worker SIGKILLed mid-download of an excerpt: its half file never counts; another worker redoes it, exactly")
    func killedMidDownload() async throws {
        var cluster = try await LocalCluster.start(workers: 0, leaseSeconds: 4)
        let data = try #require(cluster.coordinator.data)
        let proxy = try FaultProxy(to: data, faults: [.toClient: .hold])
        defer { proxy.close() }
        let scratch = Fixtures.temporaryDirectory("scratch-killed-down")
        let victim = try await cluster.addTransferWorker(named: "t0", isolated: false, data: proxy.endpoint,
                                                         extra: ["--scratch", scratch.path])
        let output = cluster.outputPath("killed-mid-download.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + TransferModeTests.flags)
        #expect(await eventually(within: .seconds(60)) { proxy.landed(.toClient) },
                "no excerpt chunk went through the proxy\n\(cluster.logs)")
        // Exactly mid-download: the fetch's unfinished file is in scratch, the excerpt itself is not.
        // (Looked for until it is seen: a fetch held past its 5 s stall timeout removes its file and
        // asks again, so on a loaded machine a single look can fall between two of them.)
        var inScratch: [String] = []
        var halfDownloaded: [String] = []
        let seen = await eventually(within: .seconds(30)) {
            inScratch = (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []
            halfDownloaded = inScratch.filter { $0.hasPrefix(".x-") && $0.hasSuffix(".partial") }
            return !halfDownloaded.isEmpty
        }
        #expect(seen && !halfDownloaded.isEmpty, "scratch: \(inScratch)")
        #expect(!inScratch.contains { $0.hasPrefix("x-") }, "a whole excerpt arrived: \(inScratch)")
        #expect(!victim.process.output.contains("segment encoded"), "\(victim.process.output)")
        victim.process.signal(SIGKILL)
        _ = await victim.process.exitStatus()

        // A new worker on the same scratch empties it before anything else (its own downloads may
        // have begun by the time it says it registered), then does the job.
        try await cluster.addTransferWorker(named: "t1", isolated: false, extra: ["--scratch", scratch.path])
        let leftover = Set(try FileManager.default.contentsOfDirectory(atPath: scratch.path)).intersection(halfDownloaded)
        #expect(leftover.isEmpty, "the killed download's file survived the next worker's start: \(leftover)")
        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await TransferModeTests.reference.value),
                "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        let done = try await cluster.segmentsDone(job: job)
        #expect(done.count == EndToEndMedia.segments)
        let victimID = try #require(try await cluster.workerID(named: "t0"))
        #expect(!done.values.contains(victimID), "the killed worker committed a segment")
        try await cluster.stop()
    }

    @Test("a transfer worker SIGKILLed mid-upload of a result: nothing of it is committed or left in the spool; redone, exactly")
    func killedMidUpload() async throws {
        var cluster = try await LocalCluster.start(workers: 0, leaseSeconds: 4)
        let data = try #require(cluster.coordinator.data)
        let proxy = try FaultProxy(to: data, faults: [.toServer: .hold])
        defer { proxy.close() }
        let victim = try await cluster.addTransferWorker(named: "t0", isolated: false, data: proxy.endpoint)
        let output = cluster.outputPath("killed-mid-upload.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + TransferModeTests.flags)
        #expect(await eventually(within: .seconds(60)) { proxy.landed(.toServer) },
                "no result chunk went through the proxy\n\(cluster.logs)")
        // Exactly mid-upload: the coordinator's fetch has its unfinished file in the job's spool
        // folder, and no result of that worker has been received.
        #expect(await eventually(within: .seconds(10)) { cluster.spoolFiles().contains { $0.hasSuffix(".partial") } },
                "no result fetch under way: \(cluster.spoolFiles())")
        #expect(!cluster.coordinatorLogs.contains("file received"), "\(cluster.coordinatorLogs)")
        victim.process.signal(SIGKILL)
        _ = await victim.process.exitStatus()

        try await cluster.addTransferWorker(named: "t1", isolated: false)
        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await TransferModeTests.reference.value),
                "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        let done = try await cluster.segmentsDone(job: job)
        #expect(done.count == EndToEndMedia.segments)
        let victimID = try #require(try await cluster.workerID(named: "t0"))
        #expect(!done.values.contains(victimID), "the killed worker's result was committed")
        // The abandoned fetch gives up on its own (stalls, then fails) and removes its file.
        #expect(await eventually(within: .seconds(60)) { !cluster.spoolFiles().contains { $0.hasSuffix(".partial") } },
                "a half result stayed in the spool: \(cluster.spoolFiles())")
        try await cluster.stop()
    }

    @Test("the coordinator SIGKILLed mid-upload of a result and started again: the result is fetched anew, exactly; no half file stays")
    func coordinatorKilledMidUpload() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        let data = try #require(cluster.coordinator.data)
        let proxy = try FaultProxy(to: data, faults: [.toServer: .hold])
        defer { proxy.close() }
        try await cluster.addTransferWorker(named: "t0", isolated: false, data: proxy.endpoint)
        let output = cluster.outputPath("coordinator-killed-mid-upload.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + TransferModeTests.flags)
        #expect(await eventually(within: .seconds(60)) { proxy.landed(.toServer) },
                "no result chunk went through the proxy\n\(cluster.logs)")
        #expect(await eventually(within: .seconds(10)) { cluster.spoolFiles().contains { $0.hasSuffix(".partial") } },
                "no result fetch under way: \(cluster.spoolFiles())")
        let halfFetched = cluster.spoolFiles().filter { $0.hasSuffix(".partial") }
        cluster.coordinator.signal(SIGKILL)
        _ = await cluster.coordinator.exitStatus()
        // The proxy ends the held connection with the coordinator's; the worker's next one is served.
        try await cluster.restartCoordinator()
        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await TransferModeTests.reference.value),
                "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments,
                "each segment committed exactly once across the restart")
        #expect(cluster.coordinator.output.contains("file received"), "the restarted coordinator fetched no result")
        // The dead coordinator's half file went with the job's spool folder; nothing half-fetched stays.
        #expect(await eventually(within: .seconds(10)) { !cluster.spoolFiles().contains { $0.hasSuffix(".partial") } },
                "\(cluster.spoolFiles())")
        #expect(halfFetched.allSatisfy { !FileManager.default.fileExists(atPath: $0) })
        try await cluster.stop()
    }

    @Test("a damaged chunk each way: the excerpt is refused by the worker, the result by the coordinator; both fetched again, exactly")
    func damagedChunks() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        let data = try #require(cluster.coordinator.data)
        let proxy = try FaultProxy(to: data, faults: [.toClient: .flipBit, .toServer: .flipBit])
        defer { proxy.close() }
        let worker = try await cluster.addTransferWorker(named: "t0", isolated: false, data: proxy.endpoint)
        let output = cluster.outputPath("damaged.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + TransferModeTests.flags)
        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(proxy.landed(.toClient) && proxy.landed(.toServer), "a damage did not land\n\(cluster.logs)")
        // Each side's SHA-256 check caught its damaged file.
        #expect(worker.process.output.contains("a chunk was damaged on the way"), "\(worker.process.output)")
        let coordinatorLog = cluster.coordinatorLogs
        #expect(coordinatorLog.contains("segment result not fetched") && coordinatorLog.contains("a chunk was damaged"),
                "\(coordinatorLog)")
        #expect(try await Digests(of: output) == (try await TransferModeTests.reference.value),
                "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments)
        // The damaged excerpt was handed back (the transfer's trouble, not the segment's: no
        // attempt spent) and redone; the damaged result cost nothing: fetched again, same attempt.
        let events = try await cluster.events(of: job)
        let returned = events.filter { $0.kind == "segment_returned" }
        #expect(returned.count == 1 && returned.allSatisfy { $0.detail?.contains("damaged") == true },
                "\(events.map { "\($0.kind) \($0.detail ?? "")" })")
        #expect(!events.contains { $0.kind == "segment_failed" })
        #expect(!cluster.spoolFiles().contains { $0.hasSuffix(".partial") }, "\(cluster.spoolFiles())")
        try await cluster.stop()
    }

    @Test("the data connection cut mid-chunk each way: each transfer asks again over the next connection and finishes; nothing redone, exactly")
    func connectionCut() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        let data = try #require(cluster.coordinator.data)
        let proxy = try FaultProxy(to: data, faults: [.toClient: .cut, .toServer: .cut])
        defer { proxy.close() }
        let worker = try await cluster.addTransferWorker(named: "t0", isolated: false, data: proxy.endpoint)
        let output = cluster.outputPath("connection-cut.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + TransferModeTests.flags)
        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(proxy.landed(.toClient) && proxy.landed(.toServer), "a cut did not land\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await TransferModeTests.reference.value),
                "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments)
        // Resumed, not failed: the worker's excerpt fetch and the coordinator's result fetch each
        // asked again for what was in flight once the connection was back.
        #expect(worker.process.output.contains("transfer stalled; asking again"), "\(worker.process.output)")
        #expect(cluster.coordinatorLogs.contains("transfer stalled; asking again"), "\(cluster.coordinatorLogs)")
        let events = try await cluster.events(of: job)
        #expect(!events.contains { $0.kind == "segment_returned" || $0.kind == "segment_failed" },
                "\(events.map { "\($0.kind) \($0.detail ?? "")" })")
        #expect(!cluster.spoolFiles().contains { $0.hasSuffix(".partial") }, "\(cluster.spoolFiles())")
        try await cluster.stop()
    }

    @Test("a transfer worker whose scratch disk is full (no --scratch-limit): it hands its segments back and is quarantined; another worker does the job, exactly",
          .enabled(if: TmpfsMount.isAvailable, "needs the right to mount a tmpfs (root)"))
    func scratchDiskFull() async throws {
        let scratch = try TmpfsMount.mount(bytes: 1 << 20)
        defer { scratch.unmount() }
        var cluster = try await LocalCluster.start(workers: 0)
        let full = try await cluster.addTransferWorker(named: "t0", isolated: false, extra: ["--scratch", scratch.path.path])
        // Filled once the worker has emptied its scratch at start: room for no excerpt.
        try scratch.fill(leaving: 8192)
        let output = cluster.outputPath("scratch-disk-full.mp4")
        let submit = try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + TransferModeTests.flags)
        #expect(await eventually(within: .seconds(60)) { cluster.coordinatorLogs.contains("worker quarantined") },
                "the worker with a full scratch was not quarantined\n\(cluster.logs)")
        #expect(full.process.output.contains("No space left on device"), "\(full.process.output)")
        try await cluster.addTransferWorker(named: "t1", isolated: false)
        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(try await Digests(of: output) == (try await TransferModeTests.reference.value),
                "output differs from splice transcode")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        let done = try await cluster.segmentsDone(job: job)
        let fullID = try #require(try await cluster.workerID(named: "t0"))
        #expect(done.count == EndToEndMedia.segments && !done.values.contains(fullID), "\(done)")
        // Handed back, not failed: the full disk is the worker's trouble, not the segment's.
        let events = try await cluster.events(of: job)
        #expect(events.contains { $0.kind == "segment_returned" && $0.detail?.contains("No space left") == true },
                "\(events.map { "\($0.kind) \($0.detail ?? "")" })")
        #expect(!events.contains { $0.kind == "segment_failed" })
        // Nothing half-fetched left in the full scratch: only the test's ballast.
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path.path) == ["ballast"])
        try await cluster.stop()
    }

    @Test("the source gone before its excerpts are cut: the job fails promptly, naming the source; no output")
    func sourceGoneBeforeCut() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        let source = Fixtures.temporaryDirectory("vanishing").appendingPathComponent("source.mp4")
        try FileManager.default.copyItem(atPath: try await EndToEndMedia.source(), toPath: source.path)
        let output = cluster.outputPath("never.mp4")
        let submit = try SpliceProcess(["submit", source.path, output, "--wait",
                                        "--coordinator", cluster.coordinator.api] + TransferModeTests.flags)
        // Planned (the coordinator read the source), nothing cut yet: no worker has asked for work.
        #expect(await eventually(within: .seconds(60)) {
            guard let job = EndToEndMedia.job(in: submit.stderrText) else { return false }
            return (try? await cluster.segments(of: job).count) == EndToEndMedia.segments
        }, "the job was not planned\n\(submit.stderrText)\n\(cluster.logs)")
        #expect(!cluster.coordinatorLogs.contains("source excerpts cut"))
        try FileManager.default.removeItem(at: source)
        try await cluster.addTransferWorker(named: "t0", isolated: false)
        let clock = ContinuousClock()
        let started = clock.now
        let result = await submit.finish(within: .seconds(120))
        let took = clock.now - started
        #expect(result.status != 0, "the job succeeded without its source\n\(result.stderr)")
        #expect(result.stderr.contains(source.path), "the reason does not name the source: \(result.stderr)")
        #expect(took < .seconds(60), "it took \(took) to fail")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(try await cluster.job(job)?.state.rawValue == "failed")
        #expect(try await cluster.job(job)?.error?.contains(source.path) == true)
        #expect(!FileManager.default.fileExists(atPath: output), "an output was written")
        #expect(try await cluster.segmentsDone(job: job).isEmpty)
        #expect(await eventually(within: .seconds(10)) { cluster.spoolFiles().isEmpty }, "\(cluster.spoolFiles())")
        try await cluster.stop()
    }
}
