import Foundation

/// `splice-bench farm --calibrate`: the costs the farm model needs, measured on this machine.
/// x264 medium CRF 23 on a generated 16 s 1920×1080 24 fps test pattern with a keyframe every
/// second, encoded by `splice transcode --json --jobs 2` (each segment's encoder on one thread) at
/// 1 s, 2 s and 8 s segments — three lengths, so the fit can tell the per-segment cost from the per-frame
/// one; and the planning of a two-hour 24 fps MP4 (64×36, a keyframe every second, video only:
/// planning reads packets and the index, not pictures, so the picture size matters little); and
/// `splice stitch` of ~60 MB of lossless segments.
struct FarmCalibration {
    var directory: URL
    var summaries: [String]
    var filmPlanMicroseconds: Int64
    /// `splice stitch` of ~60 MB of lossless 1080p segments: bytes over wall (median of three).
    var stitchBytesPerSecond: Int64

    static func measure(filmSeconds: Int, fps: Int) throws -> FarmCalibration {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("splice-bench-farm-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = dir.appendingPathComponent("calibration-1080p.mp4").path
        print("generating a 16 s 1920x1080 24 fps test pattern, a keyframe every second …")
        _ = try MeasuredProcess.run([
            "ffmpeg", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=24:duration=16",
            "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-g", "24", "-sc_threshold", "0",
            "-pix_fmt", "yuv420p", source,
        ])
        var summaries: [String] = []
        for seconds in [1, 2, 8] {
            let json = dir.appendingPathComponent("x264-medium-\(seconds)s.json").path
            print("splice transcode --json: x264 medium CRF 23, \(seconds) s segments, 2 lanes …")
            let wall = try runWritingOutput(
                [
                    Binaries.splice, "transcode", source, dir.appendingPathComponent("out-\(seconds).mp4").path, "-y",
                    "--json",
                    "--jobs", "2", "--no-audio", "--video-codec", "h264", "--preset", "medium", "--crf", "23",
                    "--segment-seconds", "\(seconds)",
                ], to: json)
            print("  \(Stats.milliseconds(wall)) wall, summary in \(json)")
            summaries.append(json)
        }
        // The stitch on bigger segments: lossless, so ~60 MB, a rate not swamped by fixed costs.
        let kept = dir.appendingPathComponent("kept").path
        print("splice transcode --keep-segments: x264 ultrafast CRF 0 (lossless), 2 s segments; "
              + "then splice stitch ×3 …")
        _ = try MeasuredProcess.run([
            Binaries.splice, "transcode", source, dir.appendingPathComponent("lossless.mp4").path, "-y",
            "--jobs", "2", "--no-audio", "--video-codec", "h264", "--preset", "ultrafast", "--crf", "0",
            "--segment-seconds", "2", "--keep-segments", kept,
        ])
        let stitched = dir.appendingPathComponent("stitched.mp4").path
        var stitchWalls: [UInt64] = []
        for _ in 0..<3 {
            stitchWalls.append(
                try MeasuredProcess.run([Binaries.splice, "stitch", kept, stitched, "-y"]).wallNanoseconds)
        }
        let stitchedBytes =
            (try FileManager.default.attributesOfItem(atPath: stitched)[.size] as? Int).map(Int64.init) ?? 0
        let stitchRate = stitchedBytes * 1_000_000_000 / Int64(max(1, Stats.median(stitchWalls)))
        let walls = stitchWalls.map { Stats.milliseconds($0) }.joined(separator: ", ")
        print("  stitched \(stitchedBytes / 1_000_000) MB in \(walls): \(stitchRate / 1_000_000) MB/s "
              + "(process start included)")
        let long = dir.appendingPathComponent("plan-\(filmSeconds)s.mp4").path
        print("generating a \(filmSeconds) s 64x36 \(fps) fps clip to time planning …")
        _ = try MeasuredProcess.run([
            "ffmpeg", "-y", "-f", "lavfi", "-i", "color=gray:size=64x36:rate=\(fps):duration=\(filmSeconds)",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "\(fps)", "-sc_threshold", "0",
            "-pix_fmt", "yuv420p", long,
        ])
        let planJSON = dir.appendingPathComponent("plan.json").path
        _ = try runWritingOutput(
            [
                Binaries.splice, "transcode", long, dir.appendingPathComponent("plan-out.mp4").path, "-y",
                "--json", "--jobs", "2", "--no-audio", "--video-codec", "h264", "--preset", "ultrafast",
                "--segment-seconds", "600",
            ], to: planJSON)
        guard let data = FileManager.default.contents(atPath: planJSON),
            let summary = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let plan = (summary["planNanoseconds"] as? NSNumber)?.int64Value
        else { throw BenchmarkUsageError("the planning run wrote no summary: \(planJSON)") }
        print("  planning \(filmSeconds) s at \(fps) fps: \(plan / 1_000_000) ms")
        return FarmCalibration(
            directory: dir, summaries: summaries, filmPlanMicroseconds: plan / 1000,
            stitchBytesPerSecond: stitchRate)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `arguments` with its standard output written to `path` (standard error discarded);
    /// returns its wall time in ns.
    static func runWritingOutput(_ arguments: [String], to path: String) throws -> UInt64 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? output.close() }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw MeasuredProcess.Failure(command: arguments.joined(separator: " "), status: process.terminationStatus)
        }
        return DispatchTime.now().uptimeNanoseconds - start
    }
}
