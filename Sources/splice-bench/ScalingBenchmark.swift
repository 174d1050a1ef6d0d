import Foundation

/// `splice-bench scaling [runs] [--codec NAME]… [--lanes N] [--seconds S] [--size WxH]`: what
/// segmenting itself costs, whatever the number of cores. `splice transcode --jobs N` (N lanes,
/// each encoder on one thread while every lane is busy) against one single-threaded `ffmpeg` at the
/// same settings — decoder and filters on one thread too, as each lane's — runs alternated:
///
///     efficiency = T(ffmpeg, 1 thread) ÷ (N × T(splice, N lanes))
///
/// 1 means N lanes do N times the work of one thread — no lead-ins, warm-ups, encoder start-ups or
/// stitch to pay; it is also printed on CPU time, ffmpeg's over splice's, which does not depend on
/// the machine's other work. Codecs: x264 (medium CRF 23), x265 (medium CRF 28), svt (SVT-AV1
/// preset 8 CRF 35), vp9 (cpu-used 4 CRF 31), aom (libaom-av1 cpu-used 6 CRF 32); video only, a
/// keyframe at most every 250 frames on both sides. Run it with N no larger than the cores.
enum ScalingBenchmark {
    struct Codec {
        var name: String
        var splice: [String]
        var ffmpeg: [String]
    }

    static let codecs = [
        Codec(name: "x264", splice: ["--video-codec", "h264", "--preset", "medium", "--crf", "23"],
              ffmpeg: ["-c:v", "libx264", "-preset", "medium", "-crf", "23", "-threads", "1"]),
        Codec(name: "x265", splice: ["--video-codec", "hevc", "--preset", "medium", "--crf", "28"],
              ffmpeg: ["-c:v", "libx265", "-preset", "medium", "-crf", "28",
                       "-x265-params", "pools=none:frame-threads=1:log-level=error"]),
        Codec(name: "svt", splice: ["--video-codec", "av1", "--video-encoder", "libsvtav1", "--preset", "8", "--crf", "35"],
              ffmpeg: ["-c:v", "libsvtav1", "-preset", "8", "-crf", "35", "-svtav1-params", "lp=1"]),
        Codec(name: "vp9", splice: ["--video-codec", "vp9", "--preset", "4", "--crf", "31"],
              ffmpeg: ["-c:v", "libvpx-vp9", "-deadline", "good", "-cpu-used", "4", "-crf", "31", "-b:v", "0",
                       "-row-mt", "1", "-threads", "1"]),
        Codec(name: "aom", splice: ["--video-codec", "av1", "--video-encoder", "libaom-av1", "--preset", "6", "--crf", "32"],
              ffmpeg: ["-c:v", "libaom-av1", "-cpu-used", "6", "-crf", "32", "-b:v", "0", "-row-mt", "1", "-threads", "1"]),
    ]

    static func run(_ arguments: [String]) throws {
        var runs = 3, lanes = 2, seconds = 20
        var size = "960x540"
        var chosen: [String] = []
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--codec": if let name = words.popFirst() { chosen.append(name) }
            case "--lanes": lanes = words.popFirst().flatMap { Int($0) } ?? lanes
            case "--seconds": seconds = words.popFirst().flatMap { Int($0) } ?? seconds
            case "--size": size = words.popFirst() ?? size
            default: if let n = Int(word) { runs = n }
            }
        }
        try BenchmarkUsageError.check(codecs: chosen, known: codecs.map(\.name))
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-scaling-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source.mp4").path
        try BenchmarkClip.generate(seconds: seconds, at: source, keyframeInterval: 60, size: size)
        var report: [String] = []
        for codec in codecs where chosen.isEmpty || chosen.contains(codec.name) {
            report += try measure(codec, source: source, lanes: lanes, runs: runs, in: dir)
        }
        print("")
        print("scaling benchmark (\(size) \(seconds) s, video only, \(lanes) lanes against one thread, "
              + "\(runs) alternated runs, medians)")
        for line in report { print(line) }
    }

    private static func measure(_ codec: Codec, source: String, lanes: Int, runs: Int, in dir: URL) throws -> [String] {
        let ours = dir.appendingPathComponent("\(codec.name)-splice.mkv").path
        let theirs = dir.appendingPathComponent("\(codec.name)-ffmpeg.mkv").path
        let transcode = [Binaries.splice, "transcode", source, ours, "-y", "--jobs", "\(lanes)", "--no-audio",
                         "--keyframe-interval", "250", "--pixel-format", "yuv420p"] + codec.splice
        // One thread end to end, as each of splice's lanes: the decoder (`-threads 1` before the
        // input; by default FFmpeg decodes H.264 on frame threads of its own) and the filters too.
        let single = ["ffmpeg", "-y", "-v", "error", "-filter_threads", "1", "-threads", "1", "-i", source, "-an",
                      "-g", "250", "-pix_fmt", "yuv420p"] + codec.ffmpeg + [theirs]
        let pairs = try PairedRuns.run(transcode, against: single, runs: runs) { i, t, f in
            print("\(codec.name) run \(i + 1)/\(runs): splice \(lanes) lanes \(Stats.milliseconds(t.wallNanoseconds)), "
                  + "ffmpeg 1 thread \(Stats.milliseconds(f.wallNanoseconds))")
        }
        let (w, fw) = pairs.medianWall
        let (c, fc) = pairs.medianCPU
        let size = (try? FileManager.default.attributesOfItem(atPath: ours)[.size] as? Int) ?? 0
        let theirSize = (try? FileManager.default.attributesOfItem(atPath: theirs)[.size] as? Int) ?? 0
        return [
            "  \(codec.name): efficiency \(Stats.ratio(fw, w * UInt64(lanes))) on wall, \(Stats.ratio(fc, c)) on CPU",
            "    wall  splice \(Stats.milliseconds(w))  ffmpeg 1 thread \(Stats.milliseconds(fw))",
            "    CPU   splice \(c / 1000) ms  ffmpeg \(fc / 1000) ms",
            "    size  splice \(size / 1024) KiB  ffmpeg \(theirSize / 1024) KiB  ratio \(Stats.ratio(size, theirSize))",
            "    splice ÷ ffmpeg \(pairs.pairRatioText)",
        ]
    }
}
