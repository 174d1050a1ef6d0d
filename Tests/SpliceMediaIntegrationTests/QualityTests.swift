import Foundation
import SpliceCore
import SpliceMedia
import SpliceTestSupport
import Testing

/// Issue 27: quality measured where segments are encoded, checked after the stitch, and judged by
/// FFmpeg's own `psnr` and `ssim` filters run by the ffmpeg CLI over the whole files.
@Suite("Quality: verify and targets")
struct QualityTests {
    /// A 4 s moving test pattern with a keyframe every second and lossless audio (PCM in MOV),
    /// so audio joins are judged against the source itself.
    static func clip() async throws -> String {
        try await Fixtures.clip(TranscodeTests.clip(seconds: 4, fps: "30", rate: 48000, width: 320, height: 240))
    }

    /// FFmpeg's per-frame luma and overall PSNR and SSIM of `output` against `reference` (its
    /// stats files), and the whole-file averages it prints.
    struct FFmpegScores {
        var mseY: [Double] = []
        var ssimY: [Double] = []
        var averagePSNRY = 0.0
        var averagePSNR = 0.0
        var averageSSIMY = 0.0
        var averageSSIM = 0.0
    }

    static func ffmpegScores(_ output: String, reference: String, filter: String = "") async throws -> FFmpegScores {
        let dir = Fixtures.temporaryDirectory("scores")
        let psnrLog = dir.appendingPathComponent("psnr.log").path, ssimLog = dir.appendingPathComponent("ssim.log").path
        let prefix = filter.isEmpty ? "[1:v]null[ref];" : "[1:v]\(filter)[ref];"
        let run = try await ExternalTool.check("ffmpeg", [
            "-hide_banner", "-i", output, "-i", reference, "-lavfi",
            prefix + "[ref]split[r1][r2];[0:v][r1]psnr=stats_file=\(psnrLog)[p];[p][r2]ssim=stats_file=\(ssimLog)",
            "-f", "null", "-"])
        var scores = FFmpegScores()
        func field(_ line: Substring, _ name: String) -> Double? {
            line.split(separator: " ").first { $0.hasPrefix(name + ":") }.flatMap { Double($0.dropFirst(name.count + 1)) }
        }
        for line in try String(contentsOfFile: psnrLog, encoding: .utf8).split(separator: "\n") {
            scores.mseY.append(try #require(field(line, "mse_y")))
        }
        for line in try String(contentsOfFile: ssimLog, encoding: .utf8).split(separator: "\n") {
            scores.ssimY.append(try #require(field(line, "Y")))
        }
        // "[Parsed_psnr_…] PSNR y:… u:… v:… average:… min:… max:…", "[Parsed_ssim_…] SSIM Y:… (…) … All:… (…)"
        for line in run.stderr.split(separator: "\n") {
            if line.contains("PSNR y:") {
                scores.averagePSNRY = try #require(field(line, "y"))
                scores.averagePSNR = try #require(field(line, "average"))
            } else if line.contains("SSIM Y:") {
                scores.averageSSIMY = try #require(field(line, "Y"))
                scores.averageSSIM = try #require(field(line, "All"))
            }
        }
        return scores
    }

    /// The per-frame figures a verified transcode measured where it encoded each segment are
    /// FFmpeg's: frame for frame, and over the whole file to 0.01 dB.
    @Test func figuresEqualFFmpegsOwnOverTheWholeFile() async throws {
        let source = try await Self.clip()
        let output = Fixtures.temporaryDirectory("verified").appendingPathComponent("out.mp4")
        var request = TranscodeRequest(video: VideoSettings(codec: .h264, quality: 30, preset: "veryfast"),
                                       audio: AudioSettings(codec: .aac), fileType: .mp4,
                                       segmentDuration: MediaTime(seconds: 1), audioSegmentDuration: MediaTime(seconds: 2))
        request.quality = QualityRequest(verify: .fail)
        let summary = try await Transcoder(options: .init(source: source, output: output, request: request, jobs: 2)).run()
        let report = try #require(summary.quality)
        #expect(report.passed, "\(report.problems.map(\.message))")
        let series = try #require(report.series)
        #expect(summary.plan.videoSegments.count >= 3)
        let ffmpeg = try await Self.ffmpegScores(output.path, reference: source)
        try #require(ffmpeg.mseY.count == series.count)
        for i in 0..<series.count {
            #expect(abs(series.mseY[i] - ffmpeg.mseY[i]) <= 0.01, "frame \(i): MSE \(series.mseY[i]) vs \(ffmpeg.mseY[i])")
            #expect(abs(series.ssimY[i] - ffmpeg.ssimY[i]) <= 1e-5, "frame \(i): SSIM \(series.ssimY[i]) vs \(ffmpeg.ssimY[i])")
        }
        let overall = try #require(report.overall)
        #expect(abs(overall.psnrY - ffmpeg.averagePSNRY) <= 0.01, "PSNR Y \(overall.psnrY) vs \(ffmpeg.averagePSNRY)")
        #expect(abs(overall.psnr - ffmpeg.averagePSNR) <= 0.01, "PSNR \(overall.psnr) vs \(ffmpeg.averagePSNR)")
        #expect(abs(overall.ssimY - ffmpeg.averageSSIMY) <= 1e-4, "SSIM Y \(overall.ssimY) vs \(ffmpeg.averageSSIMY)")
        #expect(abs(overall.ssim - ffmpeg.averageSSIM) <= 1e-4, "SSIM \(overall.ssim) vs \(ffmpeg.averageSSIM)")
        // Every segment reports its own, and they add up to the whole.
        let measured = summary.segments.compactMap { $0.figures?.quality }
        #expect(measured.count == summary.plan.videoSegments.count)
        #expect(measured.map(\.frames).reduce(0, +) == series.count)
        #expect(report.audio.count == 1 && report.audio.allSatisfy(\.passed), "\(report.audio)")
    }
}
