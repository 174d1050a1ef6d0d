import Foundation

/// `splice-bench ratecontrol [--codec h264|hevc|vp9]… [--source FILE] [--seconds N] [--segment-seconds S]`:
/// quality across segment joins for each rate-control mode, `splice transcode --jobs 2` against
/// one `ffmpeg` at the same settings, judged by ffmpeg's `psnr` filter (per-frame luma PSNR
/// against the source) and ffprobe's packets.
///
/// The default source is real content: the shared phone clip (`h264_aac44k_720p_rotated90.mp4`),
/// upright at 360×640, played forward then backward (10 s without a scene cut), re-encoded near
/// losslessly with a keyframe every half second so that segments cut anywhere; `--seconds N` plays it
/// forward and backward again until it is N seconds long (17: the clip of issue 21). Per mode it prints
/// the worst segment-start dip (mean PSNR of a segment's first 12 frames under the rest of it,
/// segments after the first), the mean PSNR and bit rate of both files, for peak-rate modes the
/// lowest level of a leaky-bucket decoder buffer over the whole file (negative: it ran dry), and
/// the extra encoding of the bit-rate warm-up (frames encoded and dropped ÷ frames kept; there is
/// no separate first pass). Figures for docs, not a test.
enum RateControlBenchmark {
    struct Mode {
        var name: String
        var splice: [String]
        var ffmpeg: [String]
        /// Peak rate and buffer size in bits, for the leaky bucket.
        var buffer: (rate: Double, size: Double)?
    }

    static func modes(codec: String) -> [Mode] {
        let (quality, encoder) = switch codec {
        case "hevc": ("28", ["-c:v", "libx265", "-x265-params", "log-level=error"])
        case "vp9": ("31", ["-c:v", "libvpx-vp9", "-b:v", "0", "-row-mt", "1", "-deadline", "good"])
        default: ("23", ["-c:v", "libx264"])
        }
        return [
            Mode(name: "default (crf \(quality))", splice: [], ffmpeg: encoder + ["-crf", quality]),
            Mode(name: "bitrate 600k", splice: ["--video-bitrate", "600k"],
                 ffmpeg: encoder.filter { $0 != "-b:v" && $0 != "0" } + ["-b:v", "600k"]),
            Mode(name: "crf 18 + vbv 500k/500k", splice: ["--crf", "18", "--max-bitrate", "500k", "--buffer-size", "500k"],
                 ffmpeg: encoder + ["-crf", "18", "-maxrate", "500k", "-bufsize", "500k"], buffer: (500_000, 500_000)),
            Mode(name: "bitrate 600k + vbv 700k/700k",
                 splice: ["--video-bitrate", "600k", "--max-bitrate", "700k", "--buffer-size", "700k"],
                 ffmpeg: encoder.filter { $0 != "-b:v" && $0 != "0" } + ["-b:v", "600k", "-maxrate", "700k", "-bufsize", "700k"],
                 buffer: (700_000, 700_000)),
        ].filter { codec != "vp9" || $0.buffer == nil }
    }

    static func run(arguments: [String]) throws {
        var codecs: [String] = []
        var source: String?
        var segmentSeconds = "2"
        var seconds = 10
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--codec": if let c = words.popFirst() { codecs.append(c) }
            case "--source": source = words.popFirst()
            case "--segment-seconds": if let s = words.popFirst() { segmentSeconds = s }
            case "--seconds": if let s = words.popFirst().flatMap({ Int($0) }) { seconds = s }
            default: break
            }
        }
        if codecs.isEmpty { codecs = ["h264", "hevc"] }
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-ratecontrol-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        let clip = try source ?? phoneClip(seconds: seconds, in: dir)
        var report: [String] = []
        for codec in codecs {
            report.append("  \(codec)")
            for mode in modes(codec: codec) {
                report.append(try measure(mode, codec: codec, source: clip, segmentSeconds: segmentSeconds, in: dir))
            }
        }
        print("")
        print("rate control across joins (\(source ?? "phone clip 360x640 \(seconds) s"), --segment-seconds \(segmentSeconds) "
              + "--jobs 2, preset veryfast / vp9 speed 6, keyint 250; splice | one ffmpeg)")
        print("    mode                          worst dip   mean PSNR        kbit/s          buffer low      warm-up")
        for line in report { print(line) }
    }

    /// The phone clip, upright, 360×640, forward then backward (and again, up to `seconds`), near
    /// lossless, keyframes every 15 frames.
    static func phoneClip(seconds: Int, in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("phone.mp4").path
        let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/media/h264_aac44k_720p_rotated90.mp4")
        print("making the source from \(shared.path) …")
        // One forward-and-backward pass is 9.94 s; each further pass doubles what the last made.
        var graph = "[0:v]scale=360:640,split[a][b];[b]reverse[r];[a][r]concat=n=2:v=1"
        var made = 10
        while made < seconds {
            graph += ",split[c\(made)][d\(made)];[c\(made)][d\(made)]concat=n=2:v=1"
            made *= 2
        }
        _ = try MeasuredProcess.run(["ffmpeg", "-y", "-i", shared.path, "-filter_complex", graph + "[v]", "-map", "[v]",
                                     "-t", "\(seconds)", "-an", "-c:v", "libx264", "-preset", "veryfast", "-crf", "6",
                                     "-g", "15", path])
        return path
    }

    struct Summary: Decodable {
        struct Time: Decodable { var value: Int64; var timescale: Int64 }
        struct Spec: Decodable { var videoStart: Time?; var videoEnd: Time?; var videoWarmUp: Time?; var audio: AudioRange? }
        struct AudioRange: Decodable {}
        struct Plan: Decodable { var segments: [Spec] }
        var plan: Plan
    }

    private static func measure(_ mode: Mode, codec: String, source: String, segmentSeconds: String,
                                in dir: URL) throws -> String {
        let ours = dir.appendingPathComponent("splice-\(codec).mp4").path
        let theirs = dir.appendingPathComponent("ffmpeg-\(codec).mp4").path
        let speed = codec == "vp9" ? ["--preset", "6"] : ["--preset", "veryfast"]
        let json = try capture([Binaries.splice, "transcode", source, ours, "-y", "--jobs", "2", "--json", "--no-audio",
                                "--segment-seconds", segmentSeconds, "--video-codec", codec, "--keyframe-interval", "250"]
                               + speed + mode.splice)
        let summary = try JSONDecoder().decode(Summary.self, from: Data(json.utf8))
        let ffSpeed = codec == "vp9" ? ["-cpu-used", "6"] : ["-preset", "veryfast"]
        _ = try MeasuredProcess.run(["ffmpeg", "-y", "-i", source, "-an", "-g", "250"] + mode.ffmpeg + ffSpeed + [theirs])

        let video = summary.plan.segments.filter { $0.audio == nil }
        let starts = video.map { $0.videoStart.map { Double($0.value) / Double($0.timescale) } ?? 0 }
        let ourFrames = try psnr(ours, source: source, in: dir), theirFrames = try psnr(theirs, source: source, in: dir)
        var worst = -Double.infinity
        for i in starts.indices.dropFirst() {
            let end = i + 1 < starts.count ? starts[i + 1] : .infinity
            let inside = ourFrames.filter { $0.time >= starts[i] - 1e-6 && $0.time < end - 1e-6 }.map(\.psnr)
            guard inside.count > 14 else { continue }
            worst = max(worst, mean(inside.dropFirst(12)) - mean(inside.prefix(12)))
        }
        // Frames × the mean frame interval.
        let duration = (ourFrames.last?.time ?? 0) * Double(ourFrames.count) / Double(max(1, ourFrames.count - 1))
        let rate = { (path: String) -> Double in
            let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            return Double(bytes) * 8 / max(duration, 1e-9) / 1000
        }
        let warmUp = video.compactMap(\.videoWarmUp).reduce(0.0) { $0 + Double($1.value) / Double($1.timescale) }
        var bufferLow = "-"
        if let buffer = mode.buffer {
            // Splice's segments start at half; one ffmpeg at the encoders' 90 %.
            bufferLow = "\(try bucketLow(ours, buffer, start: 0.5))% | \(try bucketLow(theirs, buffer, start: 0.9))%"
        }
        return "    " + pad(mode.name, 30) + pad(String(format: "%.2f dB", worst), 12)
            + pad(String(format: "%.2f | %.2f", mean(ourFrames.map(\.psnr)), mean(theirFrames.map(\.psnr))), 17)
            + pad(String(format: "%.0f | %.0f", rate(ours), rate(theirs)), 16) + pad(bufferLow, 16)
            + String(format: "%.0f %%", warmUp / max(duration, 1e-9) * 100)
    }

    /// Per-frame luma PSNR of `path` against `source`, with presentation times.
    static func psnr(_ path: String, source: String, in dir: URL) throws -> [(time: Double, psnr: Double)] {
        let stats = dir.appendingPathComponent("psnr.log").path
        _ = try MeasuredProcess.run(["ffmpeg", "-i", path, "-i", source, "-lavfi", "[0:v][1:v]psnr=stats_file=\(stats)",
                                     "-f", "null", "-"])
        let values = try String(contentsOfFile: stats, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("psnr_y:") }.map { Double($0.dropFirst(7)) ?? 99 }
        }
        let times = try capture(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                                 "-of", "csv=p=0", path])
            .split(whereSeparator: \.isNewline).compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ", "))) }
        return zip(times, values).map { ($0, $1) }
    }

    /// The lowest level (percent of the buffer) of a decoder buffer that starts `start` full (what
    /// the first picture's encoder assumed), fills at the peak rate up to its size and gives up
    /// each packet at its decode time.
    static func bucketLow(_ path: String, _ buffer: (rate: Double, size: Double), start: Double) throws -> Int {
        let packets = try capture(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                   "packet=dts_time,size", "-of", "csv=p=0", path])
            .split(whereSeparator: \.isNewline).compactMap { line -> (Double, Double)? in
                let f = line.split(separator: ",")
                guard f.count >= 2, let dts = Double(f[0]), let size = Double(f[1]) else { return nil }
                return (dts, size * 8)
            }.sorted { $0.0 < $1.0 }
        var level = start * buffer.size, lowest = level
        for (i, (dts, bits)) in packets.enumerated() {
            level -= bits
            lowest = min(lowest, level)
            if i + 1 < packets.count { level = min(buffer.size, level + buffer.rate * (packets[i + 1].0 - dts)) }
        }
        return Int((lowest / buffer.size * 100).rounded(.down))
    }

    static func capture(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw MeasuredProcess.Failure(command: arguments.joined(separator: " "), status: process.terminationStatus)
        }
        return String(decoding: data, as: UTF8.self)
    }

    private static func mean<C: Collection>(_ values: C) -> Double where C.Element == Double {
        values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count)
    }

    private static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
    }
}
