import Foundation

/// `splice-bench transcode`: `splice transcode --jobs 2` against one `ffmpeg` process at identical
/// settings on a generated 1080p30 20 s clip (libx264 medium, CRF 23, keyframe every 60 frames, AAC 128k), runs interleaved.
/// Prints the median wall ratio, the parallel efficiency (sum of segment CPU time ÷ (wall × jobs)),
/// the stitch time against `ffmpeg -f concat -c copy` joining the same segments, and the output
/// size against the single-pass file.
enum TranscodeBenchmark {
    struct Summary: Decodable {
        struct Segment: Decodable { var cpuMicroseconds: Int64; var path: String; var index: Int }
        var segments: [Segment]
        var encodeNanoseconds: UInt64
        var stitchNanoseconds: UInt64
    }

    static func run(arguments: [String]) throws {
        let runs = arguments.first.flatMap { Int($0) } ?? 3
        let jobs = 2
        let seconds = 20
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-transcode-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source-1080p.mp4").path
        try BenchmarkClip.generate(seconds: seconds, at: source)
        let ours = dir.appendingPathComponent("splice.mp4").path, theirs = dir.appendingPathComponent("ffmpeg.mp4").path
        let kept = dir.appendingPathComponent("segments")
        let summaryPath = dir.appendingPathComponent("summary.json").path
        // The same keyframe interval on both sides (as in the export benchmark): left to their
        // defaults, splice puts one every second (the MovieRecorder rule) and ffmpeg every 250 frames.
        let settings = ["--video-codec", "h264", "--preset", "medium", "--crf", "23", "--keyframe-interval", "60",
                        "--audio-codec", "aac", "--audio-bitrate", "128k"]
        let transcode = ["/bin/sh", "-c", ([Binaries.splice, "transcode", source, ours, "--jobs", "\(jobs)", "--json",
                                            "--keep-segments", kept.path] + settings).map(quote).joined(separator: " ")
                         + " > " + quote(summaryPath)]
        let single = ["ffmpeg", "-y", "-i", source, "-c:v", "libx264", "-preset", "medium", "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p",
                      "-c:a", "aac", "-b:a", "128k", theirs]
        // The by-hand reference: the same two halves, each a single-threaded ffmpeg, side by side.
        let half = seconds / 2
        let halves = ["/bin/sh", "-c", (0..<2).map { part in
            (["ffmpeg", "-v", "error", "-y", "-threads", "1", "-ss", "\(part * half)", "-t", "\(half)", "-i", source,
              "-threads", "1", "-c:v", "libx264", "-preset", "medium", "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p",
              "-c:a", "aac", "-b:a", "128k", dir.appendingPathComponent("half-\(part).mp4").path]).map(quote)
                .joined(separator: " ") + " &"
        }.joined(separator: " ") + " wait"]
        var walls: [UInt64] = [], ffmpegWalls: [UInt64] = [], halvesWalls: [UInt64] = [], efficiencies: [Int64] = []
        for i in 0..<runs {
            try? fm.removeItem(at: kept)
            var t: MeasuredProcess.Measurement, f: MeasuredProcess.Measurement
            if i % 2 == 0 {
                t = try MeasuredProcess.run(transcode)
                f = try MeasuredProcess.run(single)
            } else {
                f = try MeasuredProcess.run(single)
                t = try MeasuredProcess.run(transcode)
            }
            let h = try MeasuredProcess.run(halves)
            halvesWalls.append(h.wallNanoseconds)
            walls.append(t.wallNanoseconds)
            ffmpegWalls.append(f.wallNanoseconds)
            let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: URL(fileURLWithPath: summaryPath)))
            let cpu = summary.segments.reduce(Int64(0)) { $0 + $1.cpuMicroseconds }
            // Per mille of (wall × jobs) spent encoding segments.
            efficiencies.append(cpu * 1000 / (Int64(t.wallNanoseconds / 1000) * Int64(jobs)))
            print("run \(i + 1)/\(runs): transcode \(Stats.milliseconds(t.wallNanoseconds)) "
                  + "(\(summary.segments.count) segments), ffmpeg \(Stats.milliseconds(f.wallNanoseconds)), "
                  + "two single-threaded ffmpeg halves \(Stats.milliseconds(h.wallNanoseconds))")
        }

        // Stitch vs concat on the segments of the last run.
        let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: URL(fileURLWithPath: summaryPath)))
        var listing = ""
        for segment in summary.segments.sorted(by: { $0.index < $1.index }) {
            let copy = dir.appendingPathComponent("concat-\(segment.index).mp4").path
            _ = try MeasuredProcess.run([Binaries.splice, "segment-remux", segment.path, copy])
            listing += "file '\(copy)'\n"
        }
        let list = dir.appendingPathComponent("concat.txt")
        try listing.write(to: list, atomically: true, encoding: .utf8)
        var stitchWalls: [UInt64] = [], concatWalls: [UInt64] = []
        for i in 0..<max(3, runs) {
            let stitch = [Binaries.splice, "stitch", kept.path, dir.appendingPathComponent("restitched-\(i).mp4").path]
            let concat = ["ffmpeg", "-y", "-f", "concat", "-safe", "0", "-i", list.path, "-c", "copy",
                          dir.appendingPathComponent("concat-\(i).mp4").path]
            stitchWalls.append(try MeasuredProcess.run(stitch).wallNanoseconds)
            concatWalls.append(try MeasuredProcess.run(concat).wallNanoseconds)
        }

        let w = Stats.median(walls), fw = Stats.median(ffmpegWalls)
        let size = (try fm.attributesOfItem(atPath: ours)[.size] as? Int) ?? 0
        let theirSize = (try fm.attributesOfItem(atPath: theirs)[.size] as? Int) ?? 0
        let efficiency = Stats.median(efficiencies)
        print("transcode benchmark (1080p30 \(seconds) s, libx264 medium crf 23 g 60, aac 128k, --jobs \(jobs), \(runs) interleaved runs)")
        print("  wall        transcode \(Stats.milliseconds(w))  ffmpeg \(Stats.milliseconds(fw))  ratio \(Stats.ratio(w, fw))")
        let hw = Stats.median(halvesWalls)
        print("  reference   two single-threaded ffmpeg halves side by side \(Stats.milliseconds(hw))  ratio \(Stats.ratio(hw, fw))")
        print("  efficiency  segment CPU / (wall × \(jobs)) = \(Stats.ratio(efficiency, 1000))")
        let sw = Stats.median(stitchWalls), cw = Stats.median(concatWalls)
        print("  stitch      splice stitch \(Stats.milliseconds(sw))  ffmpeg concat -c copy \(Stats.milliseconds(cw))  ratio \(Stats.ratio(sw, cw))")
        print("  size        segmented \(size / 1024) KiB  single pass \(theirSize / 1024) KiB  ratio \(Stats.ratio(size, theirSize))")
    }

    private static func quote(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
