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
        let ffmpeg = try await FFmpegQuality.measure(output.path, reference: source)
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

    /// `splice verify` finds what is wrong with an output, each defect named by segment and time:
    /// one segment replaced by a CRF 45 encode of the same range, a dropped frame, a repeated
    /// picture at a join, audio shifted by 1,024 samples; and the correct output passes. Each
    /// defect is planted by the ffmpeg CLI into the decoded correct output, re-encoded losslessly,
    /// so nothing else changes.
    @Test func verifyNamesEveryPlantedDefectAndPassesTheCorrectOutput() async throws {
        let source = try await Self.clip()
        let dir = Fixtures.temporaryDirectory("defects")
        let good = dir.appendingPathComponent("good.mp4")
        let request = TranscodeRequest(video: VideoSettings(codec: .h264, quality: 23, preset: "veryfast"),
                                       audio: AudioSettings(codec: .aac), fileType: .mp4,
                                       segmentDuration: MediaTime(seconds: 1), audioSegmentDuration: MediaTime(seconds: 2))
        let plan = try await Transcoder(options: .init(source: source, output: good, request: request, jobs: 2)).run().plan
        let starts = plan.videoSegments.map { ($0.videoStart ?? .zero) - plan.outputZero }
        try #require(starts.count == 4)
        // Thresholds an operator of this clip would set: CRF 23 makes about 40 dB here.
        let thresholds = QualityThresholds(minPSNR: 34)
        func verify(_ output: URL) async throws -> QualityReport {
            try await OutputVerifier(options: .init(source: source, output: output.path, plan: plan, thresholds: thresholds)).run()
        }
        func plant(_ name: String, _ arguments: [String]) async throws -> URL {
            let url = dir.appendingPathComponent(name)
            try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-i", good.path] + arguments + [url.path])
            return url
        }
        let lossless = ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-pix_fmt", "yuv420p"]

        let correct = try await verify(good)
        #expect(correct.passed, "\(correct.problems.map(\.message))")
        #expect(correct.frames.expected == 120 && correct.frames.output == 120)
        #expect(correct.segments.map(\.index) == plan.videoSegments.map(\.index))
        #expect(correct.videoJoins.count == 3 && correct.audio.first?.points.contains { $0.kind == "join" } == true)

        // Segment 2 (1 s from 2 s) replaced by a CRF 45 encode of the same range of the source.
        let bad = dir.appendingPathComponent("crf45.mp4")
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-ss", "2", "-t", "1", "-i", source, "-an",
                                                "-c:v", "libx264", "-preset", "veryfast", "-crf", "45", bad.path])
        let replaced = dir.appendingPathComponent("replaced.mp4")
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-i", good.path, "-i", bad.path, "-filter_complex",
            "[0:v]split=2[g0][g1];[g0]trim=end=2,setpts=PTS-STARTPTS[p0];[g1]trim=start=3,setpts=PTS-STARTPTS[p2];"
                + "[1:v]setpts=PTS-STARTPTS[p1];[p0][p1][p2]concat=n=3:v=1:a=0,setpts=N/30/TB[v]",
            "-map", "[v]", "-map", "0:a", "-c:a", "copy"] + lossless + [replaced.path])
        let second = plan.videoSegments[2].index
        let low = try await verify(replaced)
        #expect(!low.passed)
        #expect(low.problems.contains { $0.kind == "segment" && $0.segment == second && $0.timeMilliseconds == 2000 },
                "\(low.problems.map(\.message))")
        #expect(low.problems.allSatisfy { $0.segment == second || $0.kind == "join" }, "\(low.problems.map(\.message))")

        // Frame 50 (1.667 s, in segment 1) dropped, the other timestamps kept.
        let dropped = try await verify(try await plant("dropped.mp4", [
            "-vf", "select='not(eq(n\\,50))'", "-fps_mode", "passthrough", "-c:a", "copy"] + lossless))
        #expect(dropped.frames.missing == [1666], "\(dropped.frames)")
        #expect(dropped.problems.contains { $0.kind == "frames" && $0.segment == plan.videoSegments[1].index
            && $0.timeMilliseconds == 1666 }, "\(dropped.problems.map(\.message))")

        // The first frame of segment 3 (3 s, frame 90) shows frame 89 again.
        let repeated = try await verify(try await plant("repeated.mp4", [
            "-filter_complex", "[0:v]split[a][b];[a][b]freezeframes=first=90:last=90:replace=89[v]", "-map", "[v]",
            "-map", "0:a", "-c:a", "copy"] + lossless))
        #expect(repeated.frames.shifted == [.init(timeMilliseconds: 3000, offset: -1, frames: 1)], "\(repeated.frames)")
        #expect(repeated.problems.contains { $0.kind == "frames" && $0.segment == plan.videoSegments[3].index
            && $0.timeMilliseconds == 3000 && $0.message.contains("its first frame") }, "\(repeated.problems.map(\.message))")

        // The audio 1,024 samples late (its length kept).
        let shifted = try await verify(try await plant("late-audio.mp4", [
            "-c:v", "copy", "-af", "adelay=delays=1024S:all=1,atrim=end_sample=192000", "-c:a", "aac"]))
        let lags = shifted.audio.first?.points.map(\.lag) ?? []
        #expect(!lags.isEmpty && lags.allSatisfy { $0 == 1024 }, "\(lags)")
        let audioJoin = try #require(plan.audioSegments(track: 0).dropFirst().first)
        #expect(shifted.problems.contains { $0.kind == "audio-lag" && $0.segment == audioJoin.index }, "\(shifted.problems.map(\.message))")
        #expect(!shifted.passed)
    }

    /// `splice verify` from the command line: a correct output passes (exit 0) with FFmpeg's own
    /// whole-file PSNR and SSIM; an output whose third segment is a CRF 45 encode fails (exit 2),
    /// names that segment, and its `--report` page, opened in headless Chromium, shows a non-blank
    /// picture, an SVG plot with every join marked, a row per segment, and no console message; it
    /// loads nothing from outside and shows the file name as text.
    @Test func verifyCommandAndItsReportPageInABrowser() async throws {
        let source = try await Self.clip()
        let dir = Fixtures.temporaryDirectory("verify-cli")
        let good = dir.appendingPathComponent("good.mp4").path
        let transcode = try await SpliceProcess.run(["transcode", source, good, "--crf", "23", "--preset", "veryfast",
                                                     "--segment-seconds", "1", "--jobs", "2", "--json"], timeout: .seconds(300))
        try #require(transcode.status == 0, "\(transcode.stderr)")
        let planFile = dir.appendingPathComponent("summary.json").path
        try transcode.stdout.write(toFile: planFile, atomically: true, encoding: .utf8)
        let plan = try JSONDecoder().decode(Transcoder.Summary.self, from: Data(transcode.stdout.utf8)).plan
        try #require(plan.videoSegments.count == 4)
        let third = plan.videoSegments[2].index

        let passed = try await SpliceProcess.run(["verify", source, good, "--json", "--plan", planFile], timeout: .seconds(300))
        #expect(passed.status == 0, "\(passed.stderr)")
        let report = try JSONDecoder().decode(QualityReport.self, from: Data(passed.stdout.utf8))
        let ffmpeg = try await FFmpegQuality.measure(good, reference: source)
        let overall = try #require(report.overall)
        #expect(abs(overall.psnrY - ffmpeg.averagePSNRY) <= 0.01, "PSNR Y \(overall.psnrY) vs \(ffmpeg.averagePSNRY)")
        #expect(abs(overall.ssimY - ffmpeg.averageSSIMY) <= 1e-4, "SSIM Y \(overall.ssimY) vs \(ffmpeg.averageSSIMY)")
        #expect(report.segmentsFrom == "plan" && report.segments.count == 4 && report.videoJoins.count == 3)

        // The third segment (2 s to 3 s) replaced by a CRF 45 encode of the same range, under a name with markup in it.
        let low = dir.appendingPathComponent("crf45.mp4").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-ss", "2", "-t", "1", "-i", source, "-an",
                                                "-c:v", "libx264", "-preset", "veryfast", "-crf", "45", low])
        let bad = dir.appendingPathComponent("out <b>&\"2\".mp4").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-i", good, "-i", low, "-filter_complex",
            "[0:v]split=2[g0][g1];[g0]trim=end=2,setpts=PTS-STARTPTS[p0];[g1]trim=start=3,setpts=PTS-STARTPTS[p2];"
                + "[1:v]setpts=PTS-STARTPTS[p1];[p0][p1][p2]concat=n=3:v=1:a=0,setpts=N/30/TB[v]",
            "-map", "[v]", "-map", "0:a", "-c:a", "copy", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0",
            "-pix_fmt", "yuv420p", bad])
        let page = dir.appendingPathComponent("report.html").path
        let failed = try await SpliceProcess.run(["verify", source, bad, "--plan", planFile, "--min-psnr", "34",
                                                  "--report", page], timeout: .seconds(300))
        #expect(failed.status == 2, "\(failed.stdout)\(failed.stderr)")
        #expect(failed.stdout.hasPrefix("FAILED") && failed.stdout.contains("segment \(third) (0:02"),
                "\(failed.stdout)")

        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(!html.contains(" src=") && !html.contains(" href=") && !html.contains("<script"), "self-contained, no script")
        #expect(html.contains("out &lt;b&gt;&amp;&quot;2&quot;.mp4") && !html.contains("<b>&"))
        let shot = try await Browser.screenshot(URL(fileURLWithPath: page).absoluteString, name: "quality-report.png")
        // Not blank: ffmpeg's signalstats finds dark text and plot lines on the white page.
        let stats = try await ExternalTool.check("ffprobe", [
            "-v", "error", "-f", "lavfi", "-i", "movie=\(shot.path),signalstats", "-show_entries",
            "frame_tags=lavfi.signalstats.YMIN,lavfi.signalstats.YMAX", "-of", "csv=p=0"])
        let luma = stats.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        #expect(luma.count == 2 && luma.max()! - luma.min()! > 150, "screenshot \(shot.path) luma range \(stats.text)")
        let dom = try await Browser.dom(URL(fileURLWithPath: page).absoluteString)
        #expect(!dom.console.contains("CONSOLE") && !dom.console.contains("Uncaught"), "\(dom.console)")
        #expect(dom.html.components(separatedBy: "<svg").count == 2)
        #expect(dom.html.components(separatedBy: "<polyline").count == 3, "a PSNR and an SSIM line")
        #expect(dom.html.components(separatedBy: "stroke-dasharray").count == 1 + 3, "every join marked")
        #expect(dom.html.components(separatedBy: "<tr class=\"bad\"><td>\(third)</td>").count == 2, "its row marked")
        print("quality report screenshot: \(shot.path)")
    }

    /// Eight seconds of very different content, 2 s each, made from the shared real clips and
    /// lavfi: a still picture (a Big Buck Bunny frame held), a talking head (the phone clip), high
    /// motion (the aerial city clip at twice its speed) and film grain (the concert clip under
    /// FFmpeg's temporal noise).
    static func mixedClip() async throws -> String {
        let still = Fixtures.temporaryDirectory("still").appendingPathComponent("still.png").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-i", Fixtures.shared("vp9_vorbis51_540p.webm"),
                                                "-frames:v", "1", still])
        return try await Fixtures.generated("mixed-complexity.mp4", ffmpeg: [
            "-loop", "1", "-t", "2", "-framerate", "30", "-i", still,
            "-ss", "0.5", "-t", "2", "-i", Fixtures.shared("h264_aac44k_720p_rotated90.mp4"),
            "-t", "4.2", "-i", Fixtures.shared("h264_aac_320x240_60fps_5s.mp4"),
            "-t", "2", "-i", Fixtures.shared("h264_pcm_1080p50.mov"),
            "-filter_complex",
            "[0:v]scale=480:270,setsar=1,fps=30,format=yuv420p[a];"
                + "[1:v]crop=iw:iw*9/16,scale=480:270,setsar=1,fps=30,format=yuv420p[b];"
                + "[2:v]setpts=0.5*PTS,scale=480:270,setsar=1,fps=30,trim=duration=2,format=yuv420p[c];"
                + "[3:v]scale=480:270,setsar=1,fps=30,noise=alls=8:allf=t+u,format=yuv420p[d];"
                + "[a][b][c][d]concat=n=4:v=1:a=0[v]",
            "-map", "[v]", "-c:v", "libx264", "-preset", "veryfast", "-crf", "6", "-g", "30", "-keyint_min", "30",
            "-sc_threshold", "0"])
    }

    /// Mean luma SSIM of each 2 s stretch of `output` against `source`, by ffmpeg.
    static func ssimPerTwoSeconds(_ output: String, source: String) async throws -> [Double] {
        let scores = try await FFmpegQuality.measure(output, reference: source)
        return stride(from: 0, to: scores.ssimY.count, by: 60).map { start in
            let part = scores.ssimY[start..<min(scores.ssimY.count, start + 60)]
            return part.reduce(0, +) / Double(part.count)
        }
    }

    /// With a quality target each segment finds its own CRF: every segment meets the target
    /// within its tolerance (by ffmpeg's ssim filter too), and the file is smaller than one
    /// ffmpeg encode at the single CRF that meets the target in its worst segment.
    @Test func aTargetIsMetInEverySegmentWithFewerBitsThanOneCRF() async throws {
        let source = try await Self.mixedClip()
        let target = QualityTarget(metric: .ssim, value: 0.97)
        let output = Fixtures.temporaryDirectory("target").appendingPathComponent("target.mp4")
        var request = TranscodeRequest(video: VideoSettings(codec: .h264, preset: "veryfast"), audio: nil, fileType: .mp4,
                                       segmentDuration: MediaTime(seconds: 2))
        request.quality = QualityRequest(target: target)
        let summary = try await Transcoder(options: .init(source: source, output: output, request: request, jobs: 2)).run()
        let tolerance = try #require(request.quality?.effectiveTolerance)
        #expect(summary.plan.videoSegments.count == 4)
        let figures = summary.segments.compactMap(\.figures)
        #expect(figures.count == 4 && figures.allSatisfy { $0.crf != nil && $0.quality != nil })
        // The probes' CPU is a part of each segment's, and not nothing.
        for segment in summary.segments {
            let probes = try #require(segment.probeCPUMicroseconds)
            #expect(probes > 0 && probes < segment.cpuMicroseconds, "segment \(segment.index): probes \(probes) µs of \(segment.cpuMicroseconds)")
        }
        // The segments chose different CRFs: the still picture far above the grain.
        let crfs = figures.compactMap(\.crf)
        #expect((crfs.max() ?? 0) - (crfs.min() ?? 0) >= 8, "CRFs \(crfs)")
        let measured = try await Self.ssimPerTwoSeconds(output.path, source: source)
        #expect(measured.count == 4)
        for (own, ffmpeg) in zip(figures.compactMap(\.quality?.ssimY), measured) {
            #expect(abs(own - ffmpeg) <= 1e-4, "segment SSIM \(own), ffmpeg \(ffmpeg)")
            #expect(ffmpeg >= target.value - tolerance, "segment SSIM \(ffmpeg) for a \(target) target")
        }

        // The single CRF a user would need: the highest whose worst 2 s meets the target.
        let dir = Fixtures.temporaryDirectory("single-crf")
        func single(_ crf: Int) async throws -> (bytes: Int, worst: Double) {
            let path = dir.appendingPathComponent("crf\(crf).mp4").path
            try await ExternalTool.check("ffmpeg", ["-v", "error", "-y", "-i", source, "-c:v", "libx264", "-preset", "veryfast",
                                                    "-crf", "\(crf)", path])
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
            return (size, try await Self.ssimPerTwoSeconds(path, source: source).min() ?? 0)
        }
        var (low, high) = (8, 30)  // meets at `low`, not at `high`
        try #require(try await single(low).worst >= target.value)
        while high - low > 1 {
            let middle = (low + high) / 2
            if try await single(middle).worst >= target.value { low = middle } else { high = middle }
        }
        let baseline = try await single(low)
        let bytes = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int ?? 0
        #expect(bytes < baseline.bytes, "target mode \(bytes) bytes, CRF \(low) \(baseline.bytes) bytes")
    }
}

