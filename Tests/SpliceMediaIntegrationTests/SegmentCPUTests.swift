import Foundation
import SpliceCore
@testable import SpliceMedia
import SpliceTestSupport
import Testing

/// A segment's CPU figure (`SegmentResult.cpuMicroseconds`, what `transcode --json` shows and the
/// farm model is fitted to) counts the codecs' own worker threads: the same segment on four
/// codec threads shows about what it shows on one — more, as threads cost some, never a fraction.
/// Before, only the exporting thread was clocked and four x264 threads showed a tenth of it.
@Suite("A segment's CPU figure")
struct SegmentCPUTests {
    @Test("a segment encoded on four codec threads counts their time", .enabled(if: ThreadTreeCPU.isAvailable,
          "the kernel gives this process no perf task-clock counter (perf_event_paranoid 3, or seccomp)"))
    func codecThreadsAreCounted() async throws {
        let source = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "4", width: 640, height: 360, frameRate: "25",
                                                               sampleRate: nil))
        let request = TranscodeRequest(video: VideoSettings(codec: .h264, quality: 23, preset: "medium"), audio: nil,
                                       fileType: .mp4, segmentDuration: MediaTime(seconds: 4))
        let plan = try await SegmentPlanner.plan(source: source, request: request, lanes: 1)
        let spec = try #require(plan.videoSegments.first)
        let dir = Fixtures.temporaryDirectory("segment-cpu")
        var figures: [Int: (cpu: Int64, wall: Duration)] = [:]
        for threads in [1, 4] {
            let url = dir.appendingPathComponent("segment-\(threads).splseg")
            let started = ContinuousClock.now
            let result = try await SegmentExporter(plan: plan).export(segment: spec.index, to: url, codecThreads: threads)
            figures[threads] = (result.cpuMicroseconds, ContinuousClock.now - started)
            #expect(result.videoFrames == 100)
        }
        let one = try #require(figures[1]), four = try #require(figures[4])
        #expect(one.cpu > 0)
        #expect(four.cpu * 10 >= one.cpu * 8 && four.cpu <= one.cpu * 2,
                "one thread: \(one.cpu) µs (\(one.wall)); four: \(four.cpu) µs (\(four.wall))")
    }
}
