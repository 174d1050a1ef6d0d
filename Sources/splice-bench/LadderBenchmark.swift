import Foundation

/// `splice-bench ladder [runs] [--seconds N] [--preset NAME]`: what one decode feeding every rung
/// saves. On a generated 1080p30 clip, `splice transcode OUT.m3u8 --ladder A,B` (one job: each
/// segment decoded once, encoded into both rungs) against `--ladder A` and `--ladder B` run one
/// after the other (two jobs, two decodes), and the same for three rungs; runs interleaved, the
/// median wall of each side, and the ratio (targets: ≤ 0.85 for two rungs, ≤ 0.80 for three);
/// the CPU time of each side too, which the machine's other load moves less: its median and its
/// least (other load only ever adds to it, so the least is the nearest to the work's own cost),
/// with the load average before and after. Figures for docs and closing notes, not a test.
/// `--against-ffmpeg` measures a ladder against one ffmpeg writing the same ladder instead
/// (``LadderAgainstFFmpeg``).
enum LadderBenchmark {
    static let rungs = ["1280x720@3M", "960x540@2M", "640x360@1M"]

    static func run(_ arguments: [String]) throws {
        var runs = 3, seconds = 12, preset = "medium"
        var againstFFmpeg = false
        var segmentSeconds: Int?
        var repeats = 1
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--seconds": seconds = words.popFirst().flatMap { Int($0) } ?? seconds
            case "--preset": preset = words.popFirst() ?? preset
            case "--against-ffmpeg": againstFFmpeg = true
            case "--segment-seconds": segmentSeconds = words.popFirst().flatMap { Int($0) }
            case "--repeat": repeats = max(1, words.popFirst().flatMap { Int($0) } ?? 1)
            default: if let n = Int(word) { runs = n }
            }
        }
        if againstFFmpeg { return try LadderAgainstFFmpeg.run(
            runs: runs, preset: arguments.contains("--preset") ? preset : "veryfast", segmentSeconds: segmentSeconds,
            repeats: repeats) }
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-ladder-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source.mp4").path
        try BenchmarkClip.generate(seconds: seconds, at: source, keyframeInterval: 60)
        var report: [String] = []
        let loadBefore = loadAverage()
        for count in [2, 3] {
            let ladder = Array(rungs.prefix(count))
            var together: [UInt64] = [], apart: [UInt64] = [], cpuTogether: [Int64] = [], cpuApart: [Int64] = []
            for i in 0..<runs {
                let one = { () throws -> (UInt64, Int64) in
                    let m = try transcode(source, ladder: ladder, preset: preset, in: dir)
                    return (m.wallNanoseconds, m.cpuMicroseconds)
                }
                let each = { () throws -> (UInt64, Int64) in
                    try ladder.reduce((UInt64(0), Int64(0))) { sum, rung in
                        let m = try transcode(source, ladder: [rung], preset: preset, in: dir)
                        return (sum.0 + m.wallNanoseconds, sum.1 + m.cpuMicroseconds)
                    }
                }
                let (t, a): ((UInt64, Int64), (UInt64, Int64))
                if i % 2 == 0 { t = try one(); a = try each() } else { a = try each(); t = try one() }
                together.append(t.0)
                apart.append(a.0)
                cpuTogether.append(t.1)
                cpuApart.append(a.1)
                print("\(count) rungs run \(i + 1)/\(runs): one job \(Stats.milliseconds(t.0)) (CPU \(t.1 / 1000) ms), "
                      + "\(count) jobs \(Stats.milliseconds(a.0)) (CPU \(a.1 / 1000) ms), ratio \(Stats.ratio(t.0, a.0))")
            }
            let t = Stats.median(together), a = Stats.median(apart)
            let ct = Stats.median(cpuTogether), ca = Stats.median(cpuApart)
            let lt = cpuTogether.min() ?? 0, la = cpuApart.min() ?? 0
            report.append("  \(count) rungs (\(ladder.joined(separator: ","))): one job \(Stats.milliseconds(t))  "
                          + "\(count) single-rung jobs \(Stats.milliseconds(a))  wall ratio \(Stats.ratio(t, a))  "
                          + "(target ≤ \(count == 2 ? "0.85" : "0.80")); CPU \(ct / 1000) ms vs \(ca / 1000) ms, ratio \(Stats.ratio(ct, ca)); "
                          + "least CPU \(lt / 1000) ms vs \(la / 1000) ms, ratio \(Stats.ratio(lt, la))")
        }
        print("")
        print("ladder benchmark (1080p30 \(seconds) s source, libx264 \(preset), aac, --jobs 2, 6 s HLS segments, "
              + "\(runs) interleaved runs; the machine is shared, so the figures move with its load: "
              + "load average \(loadBefore) before, \(loadAverage()) after)")
        for line in report { print(line) }
    }

    /// The 1-minute load average (`/proc/loadavg`), as printed.
    private static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").first.map(String.init) ?? "?"
    }

    private static func transcode(_ source: String, ladder: [String], preset: String, in dir: URL) throws
        -> MeasuredProcess.Measurement {
        let output = dir.appendingPathComponent("out.m3u8").path
        return try MeasuredProcess.run([Binaries.splice, "transcode", source, output, "-y", "--jobs", "2", "--preset", preset,
                                        "--ladder", ladder.joined(separator: ",")])
    }
}
