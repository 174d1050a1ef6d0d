import Foundation

/// `splice-bench transcode [runs] [--case NAME]… [--cluster]`: `splice transcode --jobs 2` against
/// one `ffmpeg` process at identical settings (libx264 medium CRF 23, a keyframe at most every 250
/// frames, AAC 128k) on generated 20 s 1080p30 clips whose keyframes differ, runs interleaved:
///
/// - `keyframes-2s`: a keyframe every 2 s, `--segment-seconds 5`;
/// - `one-keyframe`: a single keyframe (camera files, screen recordings), the default 10 s target;
/// - `all-intra`: every frame a keyframe.
///
/// For each: the median wall ratio, the cores each side keeps busy (CPU time ÷ wall), the
/// segment count and the output size against the single pass. `--cluster` also runs the same job
/// on a local cluster — `splice coordinator` and two `splice worker --slots 1` — against the local
/// transcode. Figures for docs and closing notes, not a test.
enum TranscodeBenchmark {
    struct Summary: Decodable {
        struct Segment: Decodable { var cpuMicroseconds: Int64; var path: String; var index: Int }
        var segments: [Segment]
        var encodeNanoseconds: UInt64
        var stitchNanoseconds: UInt64
    }

    struct Case {
        var name: String
        var keyframeInterval: Int
        var segmentSeconds: Int?
    }

    static let cases = [
        Case(name: "keyframes-2s", keyframeInterval: 60, segmentSeconds: 5),
        Case(name: "one-keyframe", keyframeInterval: 100_000, segmentSeconds: nil),
        Case(name: "all-intra", keyframeInterval: 1, segmentSeconds: nil),
    ]

    static let settings = ["--video-codec", "h264", "--preset", "medium", "--crf", "23", "--keyframe-interval", "250",
                           "--audio-codec", "aac", "--audio-bitrate", "128k"]

    static func run(arguments: [String]) throws {
        var runs = 3
        var chosen: [String] = []
        var cluster = false
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--case": if let name = words.popFirst() { chosen.append(name) }
            case "--cluster": cluster = true
            default: if let n = Int(word) { runs = n }
            }
        }
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-transcode-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        var report: [String] = []
        for c in cases where chosen.isEmpty || chosen.contains(c.name) {
            report += try measure(c, runs: runs, in: dir.appendingPathComponent(c.name), cluster: cluster)
        }
        print("")
        print("transcode benchmark (1080p30 20 s, libx264 medium crf 23 keyint 250, aac 128k, --jobs 2, \(runs) interleaved runs)")
        for line in report { print(line) }
    }

    private static func measure(_ c: Case, runs: Int, in dir: URL, cluster: Bool) throws -> [String] {
        let fm = FileManager.default
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        let seconds = 20
        let source = dir.appendingPathComponent("source.mp4").path
        try BenchmarkClip.generate(seconds: seconds, at: source, keyframeInterval: c.keyframeInterval)
        let ours = dir.appendingPathComponent("splice.mp4").path, theirs = dir.appendingPathComponent("ffmpeg.mp4").path
        let summaryPath = dir.appendingPathComponent("summary.json").path
        let segmentFlags = c.segmentSeconds.map { ["--segment-seconds", "\($0)"] } ?? []
        let transcode = ["/bin/sh", "-c", ([Binaries.splice, "transcode", source, ours, "-y", "--jobs", "2", "--json"]
                                            + segmentFlags + settings).map(quote).joined(separator: " ")
                         + " > " + quote(summaryPath)]
        let single = ["ffmpeg", "-y", "-i", source, "-c:v", "libx264", "-preset", "medium", "-crf", "23", "-g", "250",
                      "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", theirs]
        var segments = 0
        let pairs = try PairedRuns.run(transcode, against: single, runs: runs) { i, t, f in
            let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: URL(fileURLWithPath: summaryPath)))
            segments = summary.segments.count
            print("\(c.name) run \(i + 1)/\(runs): transcode \(Stats.milliseconds(t.wallNanoseconds)) "
                  + "(\(segments) segments), ffmpeg \(Stats.milliseconds(f.wallNanoseconds))")
        }
        let (w, fw) = pairs.medianWall
        let size = (try fm.attributesOfItem(atPath: ours)[.size] as? Int) ?? 0
        let theirSize = (try fm.attributesOfItem(atPath: theirs)[.size] as? Int) ?? 0
        // Cores busy: CPU time over wall time, each side's median run.
        let ourCores = Stats.ratio(pairs.medianCPU.ours, Int64(w / 1000))
        let theirCores = Stats.ratio(pairs.medianCPU.theirs, Int64(fw / 1000))
        var lines = [
            "  \(c.name)\(c.segmentSeconds.map { " (--segment-seconds \($0))" } ?? ""): \(segments) segments",
            "    wall        transcode \(Stats.milliseconds(w))  ffmpeg \(Stats.milliseconds(fw))  ratio \(Stats.ratio(w, fw))",
            "    cores busy  transcode \(ourCores)  ffmpeg \(theirCores)",
            "    size        segmented \(size / 1024) KiB  single pass \(theirSize / 1024) KiB  ratio \(Stats.ratio(size, theirSize))",
        ]
        if cluster {
            let clustered = try measureCluster(source: source, flags: segmentFlags + settings, runs: runs, in: dir)
            lines.append("    cluster     2 workers × 1 slot \(Stats.milliseconds(clustered))  local transcode "
                         + "\(Stats.milliseconds(w))  ratio \(Stats.ratio(clustered, w))")
        }
        return lines
    }

    /// The median wall time of `splice submit --wait` on a ``BenchCluster`` with two shared-spool
    /// workers (the first run, which also waits for the cluster to come up, not counted).
    private static func measureCluster(source: String, flags: [String], runs: Int, in dir: URL) throws -> UInt64 {
        let cluster = try BenchCluster(in: dir)
        defer { cluster.stop() }
        try cluster.startWorkers(2, storage: .spool)
        var walls: [UInt64] = []
        for i in 0...runs {
            let wall = try cluster.submit(source, to: dir.appendingPathComponent("cluster-\(i).mp4").path, flags: flags)
            if i > 0 { walls.append(wall) }
            print("cluster run \(i)/\(runs): \(Stats.milliseconds(wall))\(i == 0 ? " (warm-up)" : "")")
        }
        return Stats.median(walls)
    }

    static func quote(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
