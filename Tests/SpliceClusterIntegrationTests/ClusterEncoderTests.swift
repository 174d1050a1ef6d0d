import Foundation
import SpliceTestSupport
import Testing

/// `--video-encoder` in the cluster: a job that names its encoder goes only to the workers that
/// offer it (their HELLO's encoders, which `splice worker --encoders` narrows), without a single
/// refused attempt; the others keep taking the jobs they can do.
@Suite("Cluster: jobs that name their encoder", .timeLimit(.minutes(10)))
struct ClusterEncoderTests {
    /// 3 s, a keyframe every second: segments of a second or two.
    static let spec = Fixtures.ClipSpec(
        seconds: "3", width: 320, height: 240,
        videoCodec: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0",
                     "-pix_fmt", "yuv420p"])

    @Test("a libaom-av1 job runs only on the worker that offers libaom; an h264 job runs anywhere")
    func routedByEncoder() async throws {
        let source = try await Fixtures.clip(Self.spec)
        var cluster = try await LocalCluster.start(workers: 0)
        try await cluster.addSpoolWorker(named: "x264-only", flags: ChildWorker.usualFlags + ["--encoders", "libx264,aac"])
        try await cluster.addSpoolWorker(named: "everything")
        let (narrow, full) = (try #require(try await cluster.workerID(named: "x264-only")),
                              try #require(try await cluster.workerID(named: "everything")))

        let output = cluster.outputPath("aom.mkv")
        let submit = try await SpliceProcess.run(
            ["submit", source, output, "--video-codec", "av1", "--video-encoder", "libaom-av1", "--preset", "8",
             "--width", "160", "--no-audio", "--segment-seconds", "1", "--wait", "--coordinator", cluster.coordinator.api],
            timeout: .seconds(300))
        #expect(submit.status == 0, "submit: \(submit.stderr)\n\(cluster.logs)")
        let video = try #require(try await Probe(output, countFrames: true).first("video"))
        #expect(video.codec_name == "av1" && video.readFrames == 90)
        let job = try #require(SpliceProcess.submittedJob(in: submit.stderr))
        let done = try await cluster.segmentsDone(job: job)
        let segments = try await cluster.segments(of: job)
        #expect(segments.count >= 2 && done.count == segments.count && done.values.allSatisfy { $0 == full },
                "segments done by \(done) of \(segments.count), x264-only is \(narrow)")
        // Routed, not refused: no attempt was handed to the worker without libaom.
        let events = try await cluster.events(of: job)
        #expect(!events.contains { $0.workerID == narrow }, "\(events.map { "\($0.kind) \($0.detail ?? "")" })")

        // What the narrow worker does offer still reaches it: an h264 job is shared out.
        let h264 = cluster.outputPath("any.mp4")
        let second = try await SpliceProcess.run(
            ["submit", source, h264, "--no-audio", "--preset", "ultrafast", "--segment-seconds", "1", "--wait",
             "--coordinator", cluster.coordinator.api], timeout: .seconds(300))
        #expect(second.status == 0, "submit: \(second.stderr)")
        #expect(try await Probe(h264, countFrames: true).first("video")?.readFrames == 90)

        // A worker cannot offer an encoder its FFmpeg lacks.
        let bogus = try await SpliceProcess.run(["worker", "--encoders", "libx264,libfoo", "--spool", cluster.spool.path])
        #expect(bogus.status == 64 && bogus.stderr.contains("this FFmpeg has no libfoo"), "\(bogus.stderr)")
        try await cluster.stop()
    }
}
