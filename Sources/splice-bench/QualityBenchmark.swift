import Foundation
import SpliceMedia

/// `splice-bench quality [--part target|verify|cluster]… [--target ssim:0.97]… [--runs N] [--seconds N] [--preset NAME]`:
/// what knowing the quality costs and what aiming for it saves (issue 27). Figures for docs, not a test.
///
/// - **target**: a clip of four very different 2 s parts (a held still picture, the phone clip's
///   talking head, the aerial city clip at twice its speed, the concert clip under temporal
///   noise), 640×360, encoded by `splice transcode --target-quality`, against the one FFmpeg
///   encode (libx264, the same preset) at the single CRF that meets the same target in its worst
///   part — found by bisection to a tenth, each part judged by ffmpeg's `ssim`/`psnr` filter.
///   Prints the bytes of both, their ratio, each segment's CRF and quality, and the probes' CPU
///   time against the final encodes' (the segments' own thread CPU time from `--json`).
/// - **verify**: `splice transcode --jobs 2` of a 1080p clip with and without `--verify`: CPU
///   time (rusage of the child) and wall time, median of the runs.
/// - **cluster**: the same job on a local cluster (two workers, one slot each), `splice submit
///   --wait` with and without `--verify`: wall time, median of the runs.
enum QualityBenchmark {
    static func run(_ arguments: [String]) throws {
        var parts: [String] = []
        var targets: [String] = []
        var runs = 2
        var seconds = 10
        // The x264 preset of the verify and cluster parts: what `--verify` costs is a share of the
        // encode's CPU, which the preset sets.
        var preset = "veryfast"
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--part": if let p = words.popFirst() { parts.append(p) }
            case "--target": if let t = words.popFirst() { targets.append(t) }
            case "--runs": runs = words.popFirst().flatMap(Int.init) ?? runs
            case "--seconds": seconds = words.popFirst().flatMap(Int.init) ?? seconds
            case "--preset": preset = words.popFirst() ?? preset
            default: throw ClusterBenchmarkError("unknown argument \(word)")
            }
        }
        if parts.isEmpty { parts = ["target", "verify", "cluster"] }
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-quality-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        var report: [String] = []
        if targets.isEmpty { targets = ["ssim:0.97"] }
        if parts.contains("target") {
            for target in targets { report += try targetMode(target, in: dir) }
        }
        if parts.contains("verify") || parts.contains("cluster") {
            let clip = dir.appendingPathComponent("clip1080.mp4").path
            try BenchmarkClip.generate(seconds: seconds, at: clip)
            if parts.contains("verify") { report += try verifyCost(clip, runs: runs, seconds: seconds, preset: preset, in: dir) }
            if parts.contains("cluster") { report += try clusterCost(clip, runs: runs, seconds: seconds, preset: preset, in: dir) }
        }
        print("")
        for line in report { print(line) }
    }

    // MARK: - Target mode

    static let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/media")

    /// The four-part clip: 8 s, 640×360, 30 fps, near lossless, a keyframe every second.
    static func mixedClip(in dir: URL) throws -> String {
        let still = dir.appendingPathComponent("still.png").path
        let path = dir.appendingPathComponent("mixed.mp4").path
        print("making the mixed clip from \(shared.path) …")
        _ = try MeasuredProcess.run(["ffmpeg", "-y", "-i", shared.appendingPathComponent("vp9_vorbis51_540p.webm").path,
                                     "-frames:v", "1", still])
        _ = try MeasuredProcess.run([
            "ffmpeg", "-y", "-loop", "1", "-t", "2", "-framerate", "30", "-i", still,
            "-ss", "0.5", "-t", "2", "-i", shared.appendingPathComponent("h264_aac44k_720p_rotated90.mp4").path,
            "-t", "4.2", "-i", shared.appendingPathComponent("h264_aac_320x240_60fps_5s.mp4").path,
            "-t", "2", "-i", shared.appendingPathComponent("h264_pcm_1080p50.mov").path,
            "-filter_complex",
            "[0:v]scale=640:360,setsar=1,fps=30,format=yuv420p[a];"
                + "[1:v]crop=iw:iw*9/16,scale=640:360,setsar=1,fps=30,format=yuv420p[b];"
                + "[2:v]setpts=0.5*PTS,scale=640:360,setsar=1,fps=30,trim=duration=2,format=yuv420p[c];"
                + "[3:v]scale=640:360,setsar=1,fps=30,noise=alls=8:allf=t+u,format=yuv420p[d];"
                + "[a][b][c][d]concat=n=4:v=1:a=0[v]",
            "-map", "[v]", "-c:v", "libx264", "-preset", "veryfast", "-crf", "6", "-g", "30", "-keyint_min", "30",
            "-sc_threshold", "0", path])
        return path
    }

    /// Each 2 s part's score by ffmpeg (mean SSIM, or PSNR of the mean squared error), luma.
    static func partScores(_ path: String, source: String, metric: QualityTarget.Metric, in dir: URL) throws -> [Double] {
        let log = dir.appendingPathComponent("scores.log").path
        let filter = metric == .ssim ? "ssim" : "psnr"
        _ = try MeasuredProcess.run(["ffmpeg", "-i", path, "-i", source, "-lavfi", "[0:v][1:v]\(filter)=stats_file=\(log)",
                                     "-f", "null", "-"])
        let key = metric == .ssim ? "Y:" : "mse_y:"
        let values = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix(key) }.flatMap { Double($0.dropFirst(key.count)) }
        }
        return stride(from: 0, to: values.count, by: 60).map { start in
            let part = values[start..<min(values.count, start + 60)]
            let mean = part.reduce(0, +) / Double(part.count)
            return metric == .ssim ? mean : 10 * log10(255 * 255 / mean)
        }
    }

    static func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    static func targetMode(_ targetText: String, in dir: URL) throws -> [String] {
        guard let target = QualityTarget(parsing: targetText), target.metric != .vmaf else {
            throw ClusterBenchmarkError("--target must be ssim:X or psnr:X")
        }
        let existing = dir.appendingPathComponent("mixed.mp4").path
        let source = FileManager.default.fileExists(atPath: existing) ? existing : try mixedClip(in: dir)
        let ours = dir.appendingPathComponent("target-\(targetText).mp4").path
        let common = ["--no-audio", "--video-codec", "h264", "--preset", "veryfast", "--segment-seconds", "2", "--jobs", "4"]
        print("splice transcode --target-quality \(targetText) …")
        let started = DispatchTime.now().uptimeNanoseconds
        let json = try RateControlBenchmark.capture([Binaries.splice, "transcode", source, ours, "-y", "--json",
                                                     "--target-quality", targetText] + common)
        let targetWall = DispatchTime.now().uptimeNanoseconds - started
        let summary = try JSONDecoder().decode(Transcoder.Summary.self, from: Data(json.utf8))
        let segments = summary.segments.filter { $0.figures != nil }
        let probeCPU = segments.reduce(Int64(0)) { $0 + ($1.probeCPUMicroseconds ?? 0) }
        let allCPU = segments.reduce(Int64(0)) { $0 + $1.cpuMicroseconds }
        let ourParts = try partScores(ours, source: source, metric: target.metric, in: dir)

        // The single CRF: the highest (to a tenth) whose worst part still meets the target.
        var cache: [Double: (bytes: Int, worst: Double)] = [:]
        func single(_ crf: Double) throws -> (bytes: Int, worst: Double) {
            if let known = cache[crf] { return known }
            let path = dir.appendingPathComponent(String(format: "\(target.metric)-crf%.1f.mp4", crf)).path
            _ = try MeasuredProcess.run(["ffmpeg", "-y", "-i", source, "-an", "-c:v", "libx264", "-preset", "veryfast",
                                         "-crf", String(format: "%.1f", crf), path])
            let result = (size(path), try partScores(path, source: source, metric: target.metric, in: dir).min() ?? 0)
            cache[crf] = result
            return result
        }
        print("finding the single CRF that meets \(targetText) in every part …")
        var (low, high) = (4.0, 45.0)  // meets at `low`, not at `high`
        guard try single(low).worst >= target.value else {
            return ["  target mode: not even CRF 4 meets \(targetText) in every part"]
        }
        while high - low > 0.1001 {
            let middle = ((low + high) / 2 * 10).rounded() / 10
            if try single(middle).worst >= target.value { low = middle } else { high = middle }
        }
        let baseline = try single(low)
        // Splice at that CRF (whole: --crf takes integers), for where the saving comes from.
        let segmented = dir.appendingPathComponent("segmented.mp4").path
        let wholeCRF = Int(low.rounded(.down))
        let plain = try MeasuredProcess.run([Binaries.splice, "transcode", source, segmented, "-y", "--crf",
                                             String(wholeCRF)] + common)
        let targetBytes = size(ours)
        let format = { (v: Double) in target.metric == .ssim ? String(format: "%.4f", v) : String(format: "%.2f dB", v) }
        var lines = [
            "quality target \(targetText) on the mixed clip (still, talking head, high motion, film grain; 640x360, 8 s, "
                + "2 s segments, x264 veryfast)",
            "    target mode        \(targetBytes / 1024) KiB  parts \(ourParts.map(format).joined(separator: " "))",
            "    one ffmpeg CRF \(String(format: "%.1f", low))  \(baseline.bytes / 1024) KiB  worst part \(format(baseline.worst))"
                + "  ratio \(Stats.ratio(targetBytes, baseline.bytes))",
            "    splice CRF \(wholeCRF)         \(size(segmented) / 1024) KiB  (segmented, one CRF)",
            "    probes' CPU \(probeCPU / 1000) ms of \(allCPU / 1000) ms: \(Stats.ratio(probeCPU, max(1, allCPU - probeCPU)))"
                + "× the final encodes' (their measuring included); wall \(Stats.milliseconds(targetWall)), "
                + "one CRF \(Stats.milliseconds(plain.wallNanoseconds))",
        ]
        for segment in segments {
            guard let figures = segment.figures else { continue }
            lines.append("      segment \(segment.index): CRF \(figures.crf.map { String(format: "%.1f", $0) } ?? "-")  "
                         + "\(figures.encodes ?? 1) encode(s)  SSIM Y \(figures.quality.map { String(format: "%.4f", $0.ssimY) } ?? "-")"
                         + "  PSNR Y \(figures.quality.map { String(format: "%.2f", $0.psnrY) } ?? "-")  "
                         + "\(figures.videoBytes / 1024) KiB  probes \((segment.probeCPUMicroseconds ?? 0) / 1000) ms of "
                         + "\(segment.cpuMicroseconds / 1000) ms")
        }
        return lines
    }

    // MARK: - What verifying costs

    static func verifyCost(_ clip: String, runs: Int, seconds: Int, preset: String, in dir: URL) throws -> [String] {
        let flags = ["--video-codec", "h264", "--preset", preset, "--segment-seconds", "2", "--jobs", "2"]
        var plain: [MeasuredProcess.Measurement] = [], verified: [MeasuredProcess.Measurement] = []
        for i in 0..<runs {
            for verify in [false, true] {
                let output = dir.appendingPathComponent("verify-\(verify).mp4").path
                let m = try MeasuredProcess.run([Binaries.splice, "transcode", clip, output, "-y"] + flags
                                                + (verify ? ["--verify"] : []))
                print("transcode run \(i + 1)/\(runs)\(verify ? " --verify" : ""): cpu \(m.cpuMicroseconds / 1000) ms, "
                      + "wall \(Stats.milliseconds(m.wallNanoseconds))")
                if verify { verified.append(m) } else { plain.append(m) }
            }
        }
        let cpu = (Stats.median(plain.map(\.cpuMicroseconds)), Stats.median(verified.map(\.cpuMicroseconds)))
        let wall = (Stats.median(plain.map(\.wallNanoseconds)), Stats.median(verified.map(\.wallNanoseconds)))
        return [
            "--verify on splice transcode (1080p30 test pattern, \(seconds) s, x264 \(preset), --jobs 2; median of \(runs))",
            "    cpu    plain \(cpu.0 / 1000) ms  verified \(cpu.1 / 1000) ms  ratio \(Stats.ratio(cpu.1, cpu.0))",
            "    wall   plain \(Stats.milliseconds(wall.0))  verified \(Stats.milliseconds(wall.1))  ratio \(Stats.ratio(wall.1, wall.0))",
        ]
    }

    static func clusterCost(_ clip: String, runs: Int, seconds: Int, preset: String, in dir: URL) throws -> [String] {
        let flags = ["--video-codec", "h264", "--preset", preset, "--segment-seconds", "2"]
        let cluster = try BenchCluster(in: dir.appendingPathComponent("cluster"))
        defer { cluster.stop() }
        try cluster.startWorkers(2, storage: .spool)
        _ = try cluster.submit(clip, to: dir.appendingPathComponent("cluster-warm.mp4").path, flags: flags)
        var plain: [UInt64] = [], verified: [UInt64] = []
        for i in 0..<runs {
            for verify in [false, true] {
                let wall = try cluster.submit(clip, to: dir.appendingPathComponent("cluster-\(i)-\(verify).mp4").path,
                                              flags: flags + (verify ? ["--verify"] : []))
                print("cluster run \(i + 1)/\(runs)\(verify ? " --verify" : ""): \(Stats.milliseconds(wall))")
                if verify { verified.append(wall) } else { plain.append(wall) }
            }
        }
        let (p, v) = (Stats.median(plain), Stats.median(verified))
        return [
            "--verify on a cluster job (the same clip, 2 workers × 1 slot, splice submit --wait; median of \(runs))",
            "    wall   plain \(Stats.milliseconds(p))  verified \(Stats.milliseconds(v))  ratio \(Stats.ratio(v, p))",
        ]
    }
}
