import Foundation
import SpliceMedia
import SpliceTestSupport
import Testing

/// Issue 12: segments encoded apart keep an even quality across their joins, hit the asked bit
/// rate, and keep one buffer model over the stitched file. Judged by ffmpeg: per-frame PSNR of the
/// stitched output against its source (the `psnr` filter), and the packets ffprobe reads back.
@Suite("Rate control across joins")
struct RateControlTests {
    /// The real phone clip, upright and at 360×640, re-encoded near-losslessly with a keyframe every
    /// half second so that 1 s segments cut anywhere: the PSNR reference is this file itself.
    static func phoneClip() async throws -> String {
        try await Fixtures.generated("rate-phone.mp4", ffmpeg: [
            "-i", Fixtures.shared("h264_aac44k_720p_rotated90.mp4"), "-an", "-vf", "scale=360:640",
            "-c:v", "libx264", "-preset", "veryfast", "-crf", "6", "-g", "15", "-pix_fmt", "yuv420p"])
    }

    /// The same clip forward, backward, forward and backward, cut to 17 s: long enough that joins
    /// lie many seconds into the file, where a segment's rate control meets a single pass's only
    /// if it has warmed up for long enough.
    static func longPhoneClip() async throws -> String {
        try await Fixtures.generated("rate-phone-17s.mp4", ffmpeg: [
            "-i", Fixtures.shared("h264_aac44k_720p_rotated90.mp4"), "-an", "-filter_complex",
            "[0:v]scale=360:640,split[a][b];[b]reverse[r];[a][r]concat=n=2:v=1,split[c][d];[c][d]concat=n=2:v=1[v]",
            "-map", "[v]", "-t", "17", "-c:v", "libx264", "-preset", "veryfast", "-crf", "6", "-g", "15", "-pix_fmt", "yuv420p"])
    }

    /// Transcodes `source` in 1 s segments (or `segmentSeconds`), two at a time, with `video`.
    func transcode(_ source: String, _ video: VideoSettings, segmentSeconds: Int64 = 1)
        async throws -> (output: String, plan: SegmentPlan, segments: [SegmentResult], stitch: StitchSummary) {
        let output = Fixtures.temporaryDirectory("rate").appendingPathComponent("out.mp4")
        let request = TranscodeRequest(video: video, audio: nil, fileType: .mp4, segmentDuration: MediaTime(seconds: segmentSeconds))
        let summary = try await Transcoder(options: .init(source: source, output: output, request: request, jobs: 2)).run()
        return (output.path, summary.plan, summary.segments, summary.stitch)
    }

    static func settings(_ change: (inout VideoSettings) -> Void) -> VideoSettings {
        var video = VideoSettings(codec: .h264, preset: "veryfast", keyframeInterval: 250)
        change(&video)
        return video
    }

    /// Per-frame luma PSNR (dB) of `output` against `source`, in presentation order, with each
    /// frame's presentation time.
    func framePSNR(_ output: String, source: String) async throws -> [(time: Double, psnr: Double)] {
        let stats = Fixtures.temporaryDirectory("psnr").appendingPathComponent("psnr.log").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", output, "-i", source,
                                                "-lavfi", "[0:v][1:v]psnr=stats_file=\(stats)", "-f", "null", "-"])
        let psnr = try String(contentsOfFile: stats, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("psnr_y:") }.map { Double($0.dropFirst(7)) ?? 99 }
        }
        let times = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                             "frame=pts_time", "-of", "csv=p=0", output])
            .text.split(whereSeparator: \.isNewline).compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ", "))) }
        try #require(psnr.count == times.count && !psnr.isEmpty)
        return zip(times, psnr).map { ($0, $1) }
    }

    /// For each video segment after the first: how far the mean PSNR of its first 12 frames lies
    /// under the mean of the rest of it (positive: a dip).
    func startDips(_ frames: [(time: Double, psnr: Double)], plan: SegmentPlan) -> [Double] {
        let starts = plan.videoSegments.compactMap(\.videoStart).map { Double($0.value) / Double($0.timescale) }
        return starts.indices.compactMap { i in
            let end = i + 1 < starts.count ? starts[i + 1] : .infinity
            let inside = frames.filter { $0.time >= starts[i] - 1e-6 && $0.time < end - 1e-6 }.map(\.psnr)
            guard inside.count > 14 else { return nil }
            let head = inside.prefix(12), rest = inside.dropFirst(12)
            return rest.reduce(0, +) / Double(rest.count) - head.reduce(0, +) / Double(head.count)
        }
    }

    @Test func theDefaultIsConstantQualityAndDoesNotPumpAtJoins() async throws {
        let source = try await Self.phoneClip()
        let (output, plan, segments, _) = try await transcode(source, Self.settings { _ in })
        #expect(plan.videoSegments.count >= 4)
        let dips = startDips(try await framePSNR(output, source: source), plan: plan)
        #expect(dips.count == plan.videoSegments.count - 1)
        // Before (a guessed bit rate, x264 ABR from cold at every segment): 3–5 dB.
        #expect(dips.allSatisfy { $0 < 0.75 }, "segment-start dips \(dips)")
        // Every segment reports its figures, and they add up to the video the file holds.
        #expect(segments.allSatisfy { segment in
            segment.figures.map { $0.videoBytes > 0 && $0.meanQP != nil && $0.videoBitsPerSecond != nil } ?? false
        })
    }

    @Test func aBitRateTargetIsMetWithoutDipsAtJoins() async throws {
        let source = try await Self.phoneClip()
        let target = 600_000
        let (output, plan, _, _) = try await transcode(source, Self.settings { $0.bitrate = target })
        #expect(plan.videoSegments.dropFirst().allSatisfy { $0.videoWarmUp == MediaTime.min(RateControl.warmUp, $0.videoStart ?? .zero) })
        let dips = startDips(try await framePSNR(output, source: source), plan: plan)
        #expect(dips.allSatisfy { $0 <= 1.0 }, "segment-start dips \(dips)")
        let probe = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                             "stream=bit_rate", "-of", "csv=p=0", output])
        let rate = try #require(Int(probe.text.trimmingCharacters(in: .whitespacesAndNewlines)))
        // Within 5 % of the target, or nearer to it than one ffmpeg at the same settings gets: on
        // this 5 s clip a single pass makes 547 kbit/s (x264's average rate settles over seconds),
        // the segments 568 (573 with the 1 s warm-up before issue 21).
        let single = Fixtures.temporaryDirectory("rate-single").appendingPathComponent("ffmpeg.mp4").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", source, "-an", "-c:v", "libx264", "-preset", "veryfast",
                                                "-b:v", "\(target)", "-g", "250", single])
        let theirs = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                              "stream=bit_rate", "-of", "csv=p=0", single])
        let singleRate = try #require(Int(theirs.text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(abs(rate - target) * 100 <= target * 5 || abs(rate - target) < abs(singleRate - target),
                "video bit rate \(rate) for a \(target) target (one ffmpeg: \(singleRate))")
    }

    /// Issue 21: 2 s segments at an average rate on the 17 s clip. With a 1 s warm-up and x264's
    /// tolerance tightened to 0.25, the join at 10 s sat 1.2 dB under the rest of its segment (one
    /// ffmpeg: 0.6 dB over the same frames); now no join is more than 1 dB under, and the file's
    /// mean PSNR is within 0.3 dB of one ffmpeg's at the same settings and size.
    @Test func shortBitRateSegmentsJoinAndAverageLikeOneEncode() async throws {
        let source = try await Self.longPhoneClip()
        let (output, plan, _, _) = try await transcode(source, Self.settings { $0.bitrate = 600_000 }, segmentSeconds: 2)
        #expect(plan.videoSegments.count >= 7)
        let ours = try await framePSNR(output, source: source)
        let dips = startDips(ours, plan: plan)
        #expect(dips.allSatisfy { $0 <= 1.0 }, "segment-start dips \(dips)")

        let single = Fixtures.temporaryDirectory("rate-single").appendingPathComponent("ffmpeg.mp4").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", source, "-an", "-c:v", "libx264", "-preset", "veryfast",
                                                "-b:v", "600k", "-g", "250", single])
        let theirs = try await framePSNR(single, source: source)
        let mean = { (frames: [(time: Double, psnr: Double)]) in frames.map(\.psnr).reduce(0, +) / Double(frames.count) }
        #expect(ours.count == theirs.count)
        #expect(mean(theirs) - mean(ours) <= 0.3, "mean PSNR \(mean(ours)) dB, one ffmpeg \(mean(theirs)) dB")
        // At the same size: within 3 % of one ffmpeg's bytes.
        let size = { (path: String) in Double((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) }
        #expect(abs(size(output) - size(single)) <= 0.03 * size(single), "\(size(output)) bytes, one ffmpeg \(size(single))")
    }

    /// A quality that asks for more than the peak allows (x264, x265), or an average rate just under
    /// it, so the buffer does the work; both warm up, and joins do not dip.
    @Test(arguments: [(VideoSettings.Codec.h264, false), (.hevc, false), (.h264, true)])
    func thePeakRateHoldsOverTheStitchedFile(codec: VideoSettings.Codec, averageRate: Bool) async throws {
        let source = try await Self.phoneClip()
        let (maxRate, buffer) = (500_000, 500_000)
        let (output, plan, _, stitch) = try await transcode(source, Self.settings {
            $0.codec = codec
            if averageRate { $0.bitrate = 450_000 } else { $0.quality = 18 }
            $0.maxBitrate = maxRate
            $0.bufferSize = buffer
        })
        #expect(plan.videoSegments.count >= 4)
        #expect(plan.videoSegments.dropFirst().allSatisfy { $0.videoWarmUp == MediaTime.min(RateControl.warmUp, $0.videoStart ?? .zero) })
        // Before the warm-up, a capped quality started each segment on half a buffer: its first
        // frames sat 1.5–1.7 dB under the rest of the segment.
        let dips = startDips(try await framePSNR(output, source: source), plan: plan)
        #expect(dips.count == plan.videoSegments.count - 1)
        #expect(dips.allSatisfy { $0 <= 1.0 }, "segment-start dips \(dips)")
        // The decoder's buffer: filled at the peak rate up to its size, each picture taken out at
        // its decode time; it starts as the first segment's encoder assumed (half full).
        let packets = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                               "packet=dts_time,size", "-of", "csv=p=0", output])
            .text.split(whereSeparator: \.isNewline).compactMap { line -> (dts: Double, bits: Double)? in
                let f = line.split(separator: ",")
                guard f.count >= 2, let dts = Double(f[0]), let size = Double(f[1]) else { return nil }
                return (dts, size * 8)
            }.sorted { $0.dts < $1.dts }
        try #require(packets.count > 100)
        var level = 0.5 * Double(buffer), lowest = level
        for (i, packet) in packets.enumerated() {
            level -= packet.bits
            lowest = min(lowest, level)
            if i + 1 < packets.count {
                level = min(Double(buffer), level + Double(maxRate) * (packets[i + 1].dts - packet.dts))
            }
        }
        // Before (every segment's model starting at 90 %) the buffer of the 10 s benchmark clip ran
        // dry at 198 of its 298 pictures.
        #expect(lowest >= 0, "the stitched stream's buffer fell to \(Int(lowest)) bits")
        // The stitcher's own account of the same buffer agrees, and reports no underflow.
        let stitched = try #require(stitch.videoBufferLowestPercent)
        #expect(abs(Double(stitched) - lowest / Double(buffer) * 100) <= 2, "stitcher \(stitched) %, ffprobe \(lowest)")
        #expect(stitch.videoBufferUnderflow == nil)
    }
}
