import Foundation
import SpliceCore
import SpliceMedia
import SpliceTestSupport
import SpliceWire
import Testing

// Quality in every job (issue 27) on a real local cluster (`splice coordinator --verify`, two
// `splice worker`s, Postgres): each worker measures its segments against the source frames it
// decoded, the coordinator stores the figures and checks the stitched output. Oracle: FFmpeg's own
// psnr and ssim filters over the stitched output against the source, segment by segment.

@Suite("Quality in every cluster job", .timeLimit(.minutes(10)))
struct ClusterQualityTests {
    static let flags = EndToEndMedia.flags(preset: "veryfast")

    @Test("coordinator --verify measures a job that asked nothing; status, the page and /metrics show FFmpeg's figures")
    func aVerifiedJobsFiguresReachStatusThePageAndMetrics() async throws {
        let cluster = try await LocalCluster.start(workers: 2, coordinatorFlags: ["--verify"])
        try await withCleanup({ _ = try? await cluster.stop() }) {
            let source = try await EndToEndMedia.source()
            let output = cluster.outputPath("verified.mp4")
            let submit = try await SpliceProcess.run(["submit", source, output, "--wait", "--coordinator",
                                                      cluster.coordinator.api] + Self.flags, timeout: .seconds(300))
            #expect(submit.status == 0, "submit: \(submit.stderr)\n\(cluster.logs)")
            let job = try #require(EndToEndMedia.job(in: submit.stderr))
            #expect(cluster.coordinatorLogs.contains("job output verified"), "\(cluster.coordinatorLogs)")

            let json = try await SpliceProcess.run(["status", job, "--json", "--coordinator", cluster.coordinator.api])
            #expect(json.status == 0, "\(json.stderr)")
            let status = try JSONDecoder().decode(JobStatus.self, from: Data(json.stdout.utf8))
            let video = try #require(status.segments).filter { $0.figures != nil }
            #expect(video.count == EndToEndMedia.segments - 1)
            let measured = video.compactMap { $0.figures?.quality }
            try #require(measured.count == video.count, "every video segment measured: \(json.stdout)")

            // Each segment's figures are FFmpeg's over its frames of the stitched output.
            let ffmpeg = try await FFmpegQuality.measure(output, reference: source)
            try #require(ffmpeg.mseY.count == measured.reduce(0) { $0 + $1.frames })
            var first = 0
            for (segment, quality) in zip(video, measured) {
                let frames = first..<(first + quality.frames)
                #expect(abs(quality.psnrY - ffmpeg.psnrY(frames: frames)) <= 0.01,
                        "segment \(segment.index): PSNR Y \(quality.psnrY), ffmpeg \(ffmpeg.psnrY(frames: frames))")
                #expect(abs(quality.ssimY - ffmpeg.meanSSIMY(frames: frames)) <= 1e-4,
                        "segment \(segment.index): SSIM Y \(quality.ssimY), ffmpeg \(ffmpeg.meanSSIMY(frames: frames))")
                first += quality.frames
            }
            let combined = try #require(SegmentQuality.combined(measured))
            #expect(abs(combined.psnrY - ffmpeg.averagePSNRY) <= 0.01, "\(combined.psnrY) vs \(ffmpeg.averagePSNRY)")

            // The text form: the quality columns and the whole job's line.
            let text = try await SpliceProcess.run(["status", job, "--coordinator", cluster.coordinator.api])
            #expect(text.status == 0, "\(text.stderr)")
            let header = text.stdout.split(separator: "\n").first { $0.hasPrefix("SEGMENT") }.map(String.init) ?? ""
            #expect(header.split(separator: " ") == ["SEGMENT", "STATE", "VIDEO", "KiB", "KBIT/S", "MEAN", "QP", "CRF", "PSNR",
                                                     "Y", "SSIM", "Y", "WORST", "1S"], "\(text.stdout)")
            #expect(text.stdout.contains(String(format: "PSNR Y %.2f dB, SSIM Y %.4f over %d frames of %d segments",
                                                combined.psnrY, combined.ssimY, combined.frames, measured.count)),
                    "\(text.stdout)")

            // /metrics: one observation per measured segment, their PSNRs summed.
            let address = try #require(cluster.coordinator.metrics)
            let metrics = MetricsText(try #require(await HTTPFetch.get(address, "/metrics")).body)
            #expect(metrics.value("splice_segment_psnr_db_count") == Double(measured.count))
            #expect(metrics.value("splice_segment_ssim_count") == Double(measured.count))
            let sum = measured.reduce(0) { $0 + $1.psnrY }
            #expect(abs((metrics.value("splice_segment_psnr_db_sum") ?? 0) - sum) < 1e-6, "\(metrics.text)")

            // The status page's job row and its JSON: the job's figures, combined in SQL.
            let report = try #require(await HTTPFetch.get(address, "/status.json"))
            let page = try #require(try JSONSerialization.jsonObject(with: Data(report.body.utf8)) as? [String: Any])
            let row = try #require((page["jobs"] as? [[String: Any]])?.first { $0["id"] as? String == job })
            #expect(row["psnrY"] as? Double == (combined.psnrY * 100).rounded() / 100, "\(row)")
            #expect(abs((row["ssimY"] as? Double ?? 0) - combined.ssimY) <= 0.00006, "\(row)")
            let html = try #require(await HTTPFetch.get(address, "/")).body
            #expect(html.contains(String(format: "%.2f dB · ", combined.psnrY)), "the page's Quality column")
        }
    }

    @Test("an output under its thresholds fails its job, removed with its report kept; --verify warn keeps it")
    func anOutputUnderItsThresholdsFailsItsJob() async throws {
        let cluster = try await LocalCluster.start(workers: 2)
        try await withCleanup({ _ = try? await cluster.stop() }) {
            let source = try await EndToEndMedia.source()
            // No encode reaches 99 dB.
            let failing = cluster.outputPath("strict.mp4")
            let strict = try await SpliceProcess.run(
                ["submit", source, failing, "--wait", "--verify", "--min-psnr", "99", "--coordinator",
                 cluster.coordinator.api] + Self.flags, timeout: .seconds(300))
            #expect(strict.status != 0, "\(strict.stderr)")
            let failed = try #require(EndToEndMedia.job(in: strict.stderr))
            let job = try #require(try await cluster.job(failed))
            #expect(job.state == .failed)
            #expect(job.error?.contains("failed its quality checks") == true, "\(job.error ?? "")")
            #expect(job.error?.contains("under --min-psnr 99") == true, "\(job.error ?? "")")
            #expect(!FileManager.default.fileExists(atPath: failing), "the failed output is removed")
            let kept = try String(contentsOfFile: failing + ".verify.html", encoding: .utf8)
            #expect(kept.contains("failed</span>") && kept.contains("<svg"))

            let warned = cluster.outputPath("warned.mp4")
            let warn = try await SpliceProcess.run(
                ["submit", source, warned, "--wait", "--verify", "warn", "--min-psnr", "99", "--coordinator",
                 cluster.coordinator.api] + Self.flags, timeout: .seconds(300))
            #expect(warn.status == 0, "\(warn.stderr)")
            let kept2 = try #require(EndToEndMedia.job(in: warn.stderr))
            #expect(try await cluster.job(kept2)?.state == .succeeded)
            #expect(FileManager.default.fileExists(atPath: warned) && FileManager.default.fileExists(atPath: warned + ".verify.html"))
            #expect(cluster.coordinatorLogs.contains("job output failed its quality checks"))
        }
    }
}
