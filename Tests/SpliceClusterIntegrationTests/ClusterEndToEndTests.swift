import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

// The whole cluster as operators run it: `splice coordinator` and three `splice worker` daemons as
// child processes on one private Postgres, a shared spool, ZeroMQ over tcp://127.0.0.1, and jobs
// submitted with `splice submit --wait`. The oracle is `splice transcode` of the same input with
// the same flags (itself checked against ffmpeg in the media tests): with every encoder
// single-threaded both cut the same segments and encode them identically, so the decoded
// pictures and audio must match frame for frame and sample for sample. The processes are
// SpliceTestSupport's `LocalCluster`, which the fault suite (Tests/SpliceFaultTests) shares.

@Suite("Cluster end to end: splice coordinator, three splice workers, splice submit", .timeLimit(.minutes(8)))
struct ClusterEndToEndTests {
    @Test("a job on three workers decodes exactly like `splice transcode` of the same input")
    func matchesTranscode() async throws {
        let cluster = try await LocalCluster.start(workers: 3)
        let output = cluster.outputPath("three-workers.mp4")
        let submit = try await cluster.submitWaiting(output)
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(result.stdout == "job \(job) succeeded: \(output)\n")

        try await EndToEndMedia.expectSameAsTranscode(output)
        let encoders = try await cluster.segmentsDone(job: job)
        #expect(encoders.count == EndToEndMedia.segments, "each segment committed exactly once")
        #expect(Set(encoders.values).count > 1, "the segments were spread over the workers: \(encoders)")
        #expect(cluster.spoolFiles().isEmpty, "segment files left behind: \(cluster.spoolFiles())")
        try await cluster.stop()
    }

    @Test("SIGKILL a worker mid-segment: its lease expires, the segment runs again elsewhere, the output is exact")
    func workerKilled() async throws {
        // Short leases, so the dead worker's segment comes back quickly; slow encodes, so the
        // kill lands inside one.
        let cluster = try await LocalCluster.start(workers: 3, leaseSeconds: 4)
        let output = cluster.outputPath("worker-killed.mp4")
        let submit = try await cluster.submitWaiting(output)
        let victim = try #require(await cluster.firstWorkerEncoding(), "no worker started a segment\n\(cluster.logs)")
        victim.process.signal(SIGKILL)
        let killed = await victim.process.exitStatus()
        #expect(killed?.signalled == true && killed?.status == SIGKILL)

        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        try await EndToEndMedia.expectSameAsTranscode(output)

        let events = try await cluster.events(of: job)
        let victimID = try #require(try await cluster.workerID(named: victim.name))
        let victimLeases = events.filter { $0.kind == "segment_leased" && $0.workerID == victimID }
        let victimDone = events.filter { $0.kind == "segment_done" && $0.workerID == victimID }
        #expect(victimLeases.count > victimDone.count, "the killed worker held a lease it never completed")
        let retaken = victimLeases.compactMap(\.segmentID).filter { segment in
            !victimDone.contains { $0.segmentID == segment }
        }
        for segment in retaken {
            let done = events.filter { $0.kind == "segment_done" && $0.segmentID == segment }
            #expect(done.count == 1 && done[0].workerID != victimID && (done[0].attempt ?? 0) >= 2,
                    "segment \(segment) finished once, by another worker, on a later attempt")
        }
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments)
        #expect(cluster.spoolFiles().isEmpty, "segment files left behind: \(cluster.spoolFiles())")
        try await cluster.stop()
    }

    @Test("SIGKILL the coordinator mid-job and start it again: the job completes and submit --wait reports it")
    func coordinatorKilled() async throws {
        var cluster = try await LocalCluster.start(workers: 3)
        let output = cluster.outputPath("coordinator-killed.mp4")
        let submit = try await cluster.submitWaiting(output)
        // Some segments done, some not: the job is well under way when the coordinator dies.
        #expect(await eventually(within: .seconds(120)) { EndToEndMedia.segmentsDone(in: submit.stderrText) >= 1 },
                "no progress: \(submit.stderrText)\n\(cluster.logs)")
        cluster.coordinator.signal(SIGKILL)
        let killed = await cluster.coordinator.exitStatus()
        #expect(killed?.signalled == true && killed?.status == SIGKILL)
        #expect(await submit.waitForStderr(containing: "coordinator unreachable, retrying", within: .seconds(60)))

        try await cluster.restartCoordinator()
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(result.stderr.contains("coordinator reachable again"))
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(result.stdout == "job \(job) succeeded: \(output)\n")
        try await EndToEndMedia.expectSameAsTranscode(output)
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments,
                "each segment committed exactly once across the restart")
        try await cluster.stop()
    }

    @Test("splice cancel while the workers encode: they stop, partial files go, no output, submit --wait exits 2")
    func cancelled() async throws {
        let cluster = try await LocalCluster.start(workers: 3)
        let output = cluster.outputPath("cancelled.mp4")
        // veryslow: the encodes are still running when the CANCEL arrives.
        let submit = try await cluster.submitWaiting(output, preset: "veryslow")
        #expect(await cluster.firstWorkerEncoding() != nil, "no worker started a segment\n\(cluster.logs)")
        #expect(await submit.waitForStderr(containing: "submitted; waiting", within: .seconds(30)))
        let job = try #require(EndToEndMedia.job(in: submit.stderrText))
        let cancel = try await SpliceProcess.run(["cancel", job, "--coordinator", cluster.coordinator.api])
        #expect(cancel.status == 0, "\(cancel.stderr)")

        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 2, "submit: \(result.stderr)")
        #expect(await eventually(within: .seconds(60)) { cluster.spoolFiles().isEmpty },
                "partial files left behind: \(cluster.spoolFiles())")
        #expect(!FileManager.default.fileExists(atPath: output))
        let events = try await cluster.events(of: job)
        #expect(events.contains { $0.kind == "segment_cancelled" })
        #expect(events.filter { $0.kind == "segment_done" }.count < EndToEndMedia.segments)
        // The workers took the CANCEL and are free again: a new job runs to the end.
        let next = cluster.outputPath("after-cancel.mp4")
        let again = try await SpliceProcess.run(["submit", try await EndToEndMedia.source(), next, "--wait",
                                                 "--coordinator", cluster.coordinator.api] + EndToEndMedia.flags(),
                                                timeout: .seconds(300))
        #expect(again.status == 0, "\(again.stderr)\n\(cluster.logs)")
        try await cluster.stop()
    }
}

// MARK: - The media and the oracle

enum EndToEndMedia {
    /// 6 s, a keyframe every second, non-periodic stereo audio at 48 kHz.
    static let spec = Fixtures.ClipSpec(
        seconds: "6", width: 640, height: 360,
        videoCodec: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30",
                     "-sc_threshold", "0", "-pix_fmt", "yuv420p"])
    /// One video segment per second of source, and one audio segment (audio is cut on its own,
    /// in segments of 60 s by default).
    static let segments = 7
    /// The same flags for the cluster and for the oracle. A slowish preset keeps each segment
    /// busy long enough for the kill and cancel tests to land inside an encode.
    static func flags(preset: String = "slow") -> [String] {
        ["--video-codec", "h264", "--preset", preset, "--crf", "26",
         "--audio-codec", "aac", "--audio-bitrate", "128k", "--segment-seconds", "1"]
    }

    static func source() async throws -> String { try await Fixtures.clip(spec) }

    /// `splice transcode` of the source, once per test process.
    static let reference = Task { () throws -> Digests in
        let output = Fixtures.temporaryDirectory("reference").appendingPathComponent("transcode.mp4").path
        let result = try await SpliceProcess.run(["transcode", try await source(), output, "--jobs", "2"] + flags(),
                                                 timeout: .seconds(300))
        guard result.status == 0 else { throw TestFailure("splice transcode failed: \(result.stderr)") }
        return try await Digests(of: output)
    }

    /// The job id `splice submit` names on standard error.
    static func job(in stderr: String) -> String? {
        SpliceProcess.submittedJob(in: stderr)
    }

    /// The highest "segments done" a `submit --wait` progress line has shown (`progress 50% 3/6`).
    static func segmentsDone(in stderr: String) -> Int {
        stderr.split(separator: "\n").filter { $0.hasPrefix("progress ") }.compactMap { line in
            line.split(separator: " ").last?.split(separator: "/").first.flatMap { Int($0) }
        }.max() ?? 0
    }

    static func expectSameAsTranscode(_ output: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let (written, expected) = (try await Digests(of: output), try await reference.value)
        #expect(written.video.count == expected.video.count, "video frames", sourceLocation: sourceLocation)
        #expect(written.audioSamples == expected.audioSamples, "audio samples", sourceLocation: sourceLocation)
        let video = zip(written.video, expected.video).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        let audio = zip(written.audio, expected.audio).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        let videoDifference = "first decoded picture that differs: \(video ?? -1): "
            + "\(video.map { written.video[$0] } ?? "") vs \(video.map { expected.video[$0] } ?? "")"
        #expect(video == nil, "\(videoDifference)", sourceLocation: sourceLocation)
        let audioDifference = "first decoded audio frame that differs: \(audio ?? -1): "
            + "\(audio.map { written.audio[$0] } ?? "") vs \(audio.map { expected.audio[$0] } ?? "")"
        #expect(audio == nil, "\(audioDifference)", sourceLocation: sourceLocation)
        let source = try await Probe(try await source(), countFrames: true).first("video")?.readFrames
        #expect(written.video.count == source, "every source frame, once", sourceLocation: sourceLocation)
    }
}

// MARK: - The cluster

extension LocalCluster {
    /// `splice submit --wait` of the end-to-end clip to `output`, running.
    func submitWaiting(_ output: String, preset: String = "slow") async throws -> SpliceProcess {
        try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                           "--coordinator", coordinator.api] + EndToEndMedia.flags(preset: preset))
    }
}
