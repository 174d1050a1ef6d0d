import Foundation

/// `splice-bench export`: `splice export` against the `ffmpeg` CLI at identical settings on a
/// generated 1080p clip (libx264 medium CRF 23, keyframe every 60 frames, AAC 128k), runs
/// interleaved, printing median wall time and peak RSS and their ratios.
enum ExportBenchmark {
    static func run(arguments: [String]) throws {
        let runs = arguments.first.flatMap { Int($0) } ?? 5
        let seconds = 10
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("splice-bench-export-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source-1080p.mp4").path
        try BenchmarkClip.generate(seconds: seconds, at: source)
        let ours = dir.appendingPathComponent("splice.mp4").path, theirs = dir.appendingPathComponent("ffmpeg.mp4").path
        let spliceCommand = [Binaries.splice, "export", source, ours, "--video-codec", "h264", "--preset", "medium",
                             "--crf", "23", "--keyframe-interval", "60", "--audio-codec", "aac", "--audio-bitrate", "128k"]
        let ffmpegCommand = ["ffmpeg", "-y", "-i", source, "-c:v", "libx264", "-preset", "medium", "-crf", "23", "-g", "60",
                             "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", theirs]
        var spliceRuns: [MeasuredProcess.Measurement] = [], ffmpegRuns: [MeasuredProcess.Measurement] = []
        for i in 0..<runs {
            // Interleave and alternate who goes first, so drift in machine load hits both alike.
            if i % 2 == 0 {
                spliceRuns.append(try MeasuredProcess.run(spliceCommand))
                ffmpegRuns.append(try MeasuredProcess.run(ffmpegCommand))
            } else {
                ffmpegRuns.append(try MeasuredProcess.run(ffmpegCommand))
                spliceRuns.append(try MeasuredProcess.run(spliceCommand))
            }
            print("run \(i + 1)/\(runs): splice \(Stats.milliseconds(spliceRuns.last!.wallNanoseconds)), "
                  + "ffmpeg \(Stats.milliseconds(ffmpegRuns.last!.wallNanoseconds))")
        }
        let sw = Stats.median(spliceRuns.map(\.wallNanoseconds)), fw = Stats.median(ffmpegRuns.map(\.wallNanoseconds))
        let sm = Stats.median(spliceRuns.map(\.peakRSSKiB)), fm = Stats.median(ffmpegRuns.map(\.peakRSSKiB))
        let ourSize = (try FileManager.default.attributesOfItem(atPath: ours)[.size] as? Int) ?? 0
        let theirSize = (try FileManager.default.attributesOfItem(atPath: theirs)[.size] as? Int) ?? 0
        print("export benchmark (1080p30 \(seconds) s, libx264 medium crf 23, aac 128k, \(runs) interleaved runs)")
        print("  wall      splice \(Stats.milliseconds(sw))  ffmpeg \(Stats.milliseconds(fw))  ratio \(Stats.ratio(sw, fw))")
        print("  peak RSS  splice \(sm / 1024) MiB  ffmpeg \(fm / 1024) MiB  ratio \(Stats.ratio(sm, fm))")
        print("  size      splice \(ourSize / 1024) KiB  ffmpeg \(theirSize / 1024) KiB  ratio \(Stats.ratio(ourSize, theirSize))")
    }
}
