import Foundation

/// `splice-bench codecs [runs] [--codec NAME]… [--jobs N] [--segment-seconds S]`:
/// the goal of "faster than one encoder with every codec" measured as users would compare: `splice
/// transcode --jobs N` against one `ffmpeg` process at the same settings with its encoder's own
/// threading (what a user runs instead), runs alternated, on real pictures: the seven shared
/// device and encoder clips with motion, end to end (22 s; the long shared recording is nearly a
/// still), each scaled into 960×540 at 30 fps, near lossless with a keyframe every 2 s so segments
/// can start anywhere. Codecs and settings are `splice-bench scaling`'s (x264 medium CRF 23, x265
/// medium CRF 28, SVT-AV1 preset 8 CRF 35, VP9 cpu-used 4 CRF 31 row-mt, libaom-av1 cpu-used 6
/// CRF 32 row-mt), video only, a keyframe at most every 250 frames on both sides.
///
/// Prints per codec the median wall ratio (splice ÷ ffmpeg), the CPU ratio, the cores each side
/// keeps busy, the size ratio and both outputs' PSNR against the source (ffmpeg's `psnr` filter, the
/// mean squared error's PSNR over all frames), so "the same settings" can be checked: the goals hold
/// only where sizes agree within 2 % and PSNR within 0.1 dB. From splice's `--json` summary, where
/// its lanes waited (``LaneTimeline``): lanes busy over the encode and how far apart they ended.
enum CodecSpeedBenchmark {
    struct Codec {
        var name: String
        var splice: [String]
        var ffmpeg: [String]
    }

    static let codecs = [
        Codec(name: "x264", splice: ["--video-codec", "h264", "--preset", "medium", "--crf", "23"],
              ffmpeg: ["-c:v", "libx264", "-preset", "medium", "-crf", "23"]),
        Codec(name: "x265", splice: ["--video-codec", "hevc", "--preset", "medium", "--crf", "28"],
              ffmpeg: ["-c:v", "libx265", "-preset", "medium", "-crf", "28", "-x265-params", "log-level=error"]),
        Codec(name: "svt", splice: ["--video-codec", "av1", "--video-encoder", "libsvtav1", "--preset", "8", "--crf", "35"],
              ffmpeg: ["-c:v", "libsvtav1", "-preset", "8", "-crf", "35"]),
        Codec(name: "vp9", splice: ["--video-codec", "vp9", "--preset", "4", "--crf", "31"],
              ffmpeg: ["-c:v", "libvpx-vp9", "-deadline", "good", "-cpu-used", "4", "-crf", "31", "-b:v", "0",
                       "-row-mt", "1"]),
        Codec(name: "aom", splice: ["--video-codec", "av1", "--video-encoder", "libaom-av1", "--preset", "6", "--crf", "32"],
              ffmpeg: ["-c:v", "libaom-av1", "-cpu-used", "6", "-crf", "32", "-b:v", "0", "-row-mt", "1"]),
    ]

    static func run(_ arguments: [String]) throws {
        var runs = 3, jobs = 2, segmentSeconds = 6
        var chosen: [String] = []
        var words = arguments[...]
        while let word = words.popFirst() {
            func number() throws -> Int {
                guard let text = words.popFirst(), let n = Int(text), n > 0 else {
                    throw BenchmarkUsageError("\(word) needs a positive whole number")
                }
                return n
            }
            switch word {
            case "--codec": if let name = words.popFirst() { chosen.append(name) }
            case "--jobs": jobs = try number()
            case "--segment-seconds": segmentSeconds = try number()
            default:
                guard let n = Int(word), n > 0 else { throw BenchmarkUsageError("unknown argument \(word)") }
                runs = n
            }
        }
        try BenchmarkUsageError.check(codecs: chosen, known: codecs.map(\.name))
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-codecs-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source.mp4").path
        try realClip(at: source)
        var report: [String] = []
        for codec in codecs where chosen.isEmpty || chosen.contains(codec.name) {
            report += try measure(codec, source: source, jobs: jobs, segmentSeconds: segmentSeconds, runs: runs, in: dir)
        }
        print("")
        print("codec speed benchmark (the shared real clips end to end, 960×540 30 fps 22 s, video only, splice --jobs \(jobs) "
              + "--segment-seconds \(segmentSeconds) against one ffmpeg with its own threads, \(runs) alternated runs, medians)")
        for line in report { print(line) }
    }

    private static func measure(_ codec: Codec, source: String, jobs: Int, segmentSeconds: Int, runs: Int,
                                in dir: URL) throws -> [String] {
        let ours = dir.appendingPathComponent("\(codec.name)-splice.mkv").path
        let theirs = dir.appendingPathComponent("\(codec.name)-ffmpeg.mkv").path
        // The summary (--json, through sh) tells where the lanes waited.
        let summary = dir.appendingPathComponent("\(codec.name)-summary.json").path
        let transcode = ["/bin/sh", "-c", ([Binaries.splice, "transcode", source, ours, "-y", "--jobs", "\(jobs)", "--no-audio",
                                            "--segment-seconds", "\(segmentSeconds)", "--keyframe-interval", "250",
                                            "--pixel-format", "yuv420p", "--json"] + codec.splice)
                            .map(TranscodeBenchmark.quote).joined(separator: " ") + " > " + TranscodeBenchmark.quote(summary)]
        let single = ["ffmpeg", "-y", "-v", "error", "-i", source, "-an", "-g", "250", "-pix_fmt", "yuv420p"]
            + codec.ffmpeg + [theirs]
        var timelines: [LaneTimeline] = []
        let pairs = try PairedRuns.run(transcode, against: single, runs: runs) { i, t, f in
            let timeline = try LaneTimeline(summaryAt: summary, lanes: jobs)
            if let timeline { timelines.append(timeline) }
            print("\(codec.name) run \(i + 1)/\(runs): splice \(Stats.milliseconds(t.wallNanoseconds)) "
                  + "(cpu \(t.cpuMicroseconds / 1000) ms\(timeline.flatMap { LaneTimeline.describe([$0]) }.map { "; lanes " + $0 } ?? "")), "
                  + "ffmpeg \(Stats.milliseconds(f.wallNanoseconds)) (cpu \(f.cpuMicroseconds / 1000) ms)")
        }
        let (w, fw) = pairs.medianWall
        let (c, fc) = pairs.medianCPU
        let size = QualityBenchmark.size(ours), theirSize = QualityBenchmark.size(theirs)
        let psnr = try wholePSNR(ours, source: source, in: dir), theirPSNR = try wholePSNR(theirs, source: source, in: dir)
        func cores(_ cpu: Int64, _ wall: UInt64) -> String { String(format: "%.2f", Double(cpu) * 1000 / Double(max(wall, 1))) }
        return [
            "  \(codec.name): wall \(Stats.ratio(w, fw))×, CPU \(Stats.ratio(c, fc))× one ffmpeg",
            "    wall  splice \(Stats.milliseconds(w))  ffmpeg \(Stats.milliseconds(fw))",
            "    CPU   splice \(c / 1000) ms (\(cores(c, w)) cores busy)  ffmpeg \(fc / 1000) ms (\(cores(fc, fw)) cores busy)",
            "    lanes splice " + (LaneTimeline.describe(timelines).map { $0 + " (medians)" } ?? "gave no timings in its summary"),
            "    size  splice \(size / 1024) KiB  ffmpeg \(theirSize / 1024) KiB  ratio \(Stats.ratio(size, theirSize))",
            "    PSNR  splice " + String(format: "%.3f", psnr) + " dB  ffmpeg " + String(format: "%.3f", theirPSNR)
                + " dB  difference " + String(format: "%+.3f", psnr - theirPSNR) + " dB",
            "    \(pairs.pairRatioText)",
        ]
    }

    /// The shared clips with motion, end to end as one 960×540 30 fps clip (each fitted inside the
    /// frame, rotation honoured), near lossless: 5 + 5 + 4 + 2 + 2.5 + 1 + 2.5 s.
    static func realClip(at path: String) throws {
        let names = ["h264_aac44k_720p_rotated90.mp4", "h264_aac_320x240_60fps_5s.mp4", "h264_bpyramid_800x640.mp4",
                     "h264_pcm_1080p50.mov", "hevc10_bframes_editlist.mp4", "vp9_vorbis51_540p.webm", "mpeg2_mp2_1080p.ts"]
        let files = names.map { QualityBenchmark.shared.appendingPathComponent($0).path }
        if let missing = files.first(where: { !FileManager.default.fileExists(atPath: $0) }) {
            throw BenchmarkUsageError("the real clip \(missing) is missing (the shared media folder beside the checkout)")
        }
        let fitted = files.indices.map { i in
            "[\(i):v:0]scale=960:540:force_original_aspect_ratio=decrease,pad=960:540:(ow-iw)/2:(oh-ih)/2,"
                + "setsar=1,fps=30,format=yuv420p[v\(i)]"
        }
        let graph = fitted.joined(separator: ";") + ";" + files.indices.map { "[v\($0)]" }.joined()
            + "concat=n=\(files.count):v=1:a=0[out]"
        _ = try MeasuredProcess.run(["ffmpeg", "-y", "-v", "error"] + files.flatMap { ["-i", $0] }
                                    + ["-filter_complex", graph, "-map", "[out]", "-c:v", "libx264", "-preset", "veryfast",
                                       "-crf", "12", "-g", "60", "-sc_threshold", "0", path])
    }

    /// The PSNR (all planes) of the mean squared error over every frame, by ffmpeg's `psnr` filter.
    static func wholePSNR(_ path: String, source: String, in dir: URL) throws -> Double {
        let log = dir.appendingPathComponent("psnr.log").path
        _ = try MeasuredProcess.run(["ffmpeg", "-v", "error", "-i", path, "-i", source,
                                     "-lavfi", "[0:v][1:v]psnr=stats_file=\(log)", "-f", "null", "-"])
        let values = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("mse_avg:") }.flatMap { Double($0.dropFirst("mse_avg:".count)) }
        }
        guard !values.isEmpty else { throw BenchmarkUsageError("ffmpeg's psnr filter scored no frame of \(path)") }
        return 10 * log10(255 * 255 / (values.reduce(0, +) / Double(values.count)))
    }
}
