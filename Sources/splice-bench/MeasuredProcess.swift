import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a command and measures it the way the benchmarks compare tools: wall time, CPU time and
/// peak resident memory of the child (from `wait4`'s rusage), with output discarded.
struct MeasuredProcess {
    struct Measurement {
        var wallNanoseconds: UInt64
        var cpuMicroseconds: Int64
        var peakRSSKiB: Int
    }

    struct Failure: Error, CustomStringConvertible {
        var command: String
        var status: Int32
        var description: String { "`\(command)` exited with status \(status)" }
    }

    /// Runs `arguments[0]` (searched on PATH) with the rest as arguments.
    static func run(_ arguments: [String]) throws -> Measurement {
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let start = DispatchTime.now().uptimeNanoseconds
        let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(command: arguments.joined(separator: " "), status: spawned) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let wall = DispatchTime.now().uptimeNanoseconds - start
        let exited = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard exited == 0 else { throw Failure(command: arguments.joined(separator: " "), status: exited) }
        let cpu = Int64(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000
            + Int64(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
        return Measurement(wallNanoseconds: wall, cpuMicroseconds: cpu, peakRSSKiB: Int(usage.ru_maxrss))
    }
}

/// Small statistics for printing figures.
enum Stats {
    static func median<T: BinaryInteger>(_ values: [T]) -> T {
        let s = values.sorted()
        return s.isEmpty ? 0 : s[s.count / 2]
    }

    /// `a / b` with three decimals, from integers.
    static func ratio<T: BinaryInteger>(_ a: T, _ b: T) -> String {
        guard b != 0 else { return "n/a" }
        let thousandths = Int64(a) * 1000 / Int64(b)
        let frac = String(thousandths % 1000)
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - frac.count) + frac
    }

    static func milliseconds(_ nanoseconds: UInt64) -> String {
        "\(nanoseconds / 1_000_000) ms"
    }
}

/// Where `splice` lives: beside this benchmark binary.
enum Binaries {
    static var splice: String {
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return me.deletingLastPathComponent().appendingPathComponent("splice").path
    }
}

/// The benchmarks' source clip: a generated 30 fps test pattern (1920x1080 unless told) with a 440 Hz tone,
/// keyframes every 2 s, high quality so decoding it is realistic.
enum BenchmarkClip {
    /// `keyframeInterval` frames between keyframes (60: every 2 s; 1: all-intra; a huge one: a
    /// single keyframe, with scene-cut detection off so none is added).
    static func generate(seconds: Int, at path: String, keyframeInterval: Int = 60, size: String = "1920x1080") throws {
        print("generating a \(seconds) s \(size) 30 fps clip with audio, a keyframe every \(keyframeInterval) frames …")
        _ = try MeasuredProcess.run(["ffmpeg", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30:duration=\(seconds)",
                                     "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
                                     "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-g", "\(keyframeInterval)",
                                     "-sc_threshold", "0", "-pix_fmt", "yuv420p",
                                     "-c:a", "aac", "-b:a", "192k", "-ac", "2", path])
    }
}

/// Two commands measured side by side: run `runs` times, alternated (ours first on even runs,
/// theirs first on odd ones) so a drift in the machine's load falls on both; each side's
/// measurements in run order, and their medians.
struct PairedRuns {
    var ours: [MeasuredProcess.Measurement] = []
    var theirs: [MeasuredProcess.Measurement] = []

    /// Runs `ours` and `theirs` `runs` times; `prepare` before each run, `after` with each run's pair.
    static func run(_ ours: [String], against theirs: [String], runs: Int, prepare: () throws -> Void = {},
                    after: (_ run: Int, _ ours: MeasuredProcess.Measurement, _ theirs: MeasuredProcess.Measurement) throws -> Void)
        throws -> PairedRuns
    {
        var pairs = PairedRuns()
        for i in 0..<runs {
            try prepare()
            let o: MeasuredProcess.Measurement, t: MeasuredProcess.Measurement
            if i % 2 == 0 {
                o = try MeasuredProcess.run(ours)
                t = try MeasuredProcess.run(theirs)
            } else {
                t = try MeasuredProcess.run(theirs)
                o = try MeasuredProcess.run(ours)
            }
            pairs.ours.append(o)
            pairs.theirs.append(t)
            try after(i, o, t)
        }
        return pairs
    }

    /// The median wall time of each side, ns.
    var medianWall: (ours: UInt64, theirs: UInt64) {
        (Stats.median(ours.map(\.wallNanoseconds)), Stats.median(theirs.map(\.wallNanoseconds)))
    }

    /// The median CPU time of each side, µs.
    var medianCPU: (ours: Int64, theirs: Int64) {
        (Stats.median(ours.map(\.cpuMicroseconds)), Stats.median(theirs.map(\.cpuMicroseconds)))
    }

    /// Ours over theirs run by run, in thousandths: `(median, lowest, highest)`. Steadier than the
    /// ratio of the medians when the machine drifts during a set (each pair ran minutes apart at
    /// most; the medians may come from runs a slower host made).
    func pairRatios(_ value: (MeasuredProcess.Measurement) -> Int64) -> (median: Int64, low: Int64, high: Int64) {
        let ratios = zip(ours, theirs).map { o, t in value(t) > 0 ? value(o) * 1000 / value(t) : 0 }.sorted()
        guard let low = ratios.first, let high = ratios.last else { return (0, 0, 0) }
        return (Stats.median(ratios), low, high)
    }

    /// ``pairRatios(_:)`` of wall and CPU as text: "pair by pair: wall 0.941 (0.891–1.013), CPU …".
    var pairRatioText: String {
        func text(_ r: (median: Int64, low: Int64, high: Int64)) -> String {
            "\(Stats.ratio(r.median, 1000)) (\(Stats.ratio(r.low, 1000))–\(Stats.ratio(r.high, 1000)))"
        }
        return "pair by pair: wall \(text(pairRatios { Int64($0.wallNanoseconds) })), CPU \(text(pairRatios(\.cpuMicroseconds)))"
    }
}
