import Foundation

/// `splice-bench ladder --against-ffmpeg [runs] [--preset NAME] [--segment-seconds N] [--repeat N]`: an HLS ladder of two rungs
/// (960x540@2M, 480x270@500k, x264 veryfast unless told) made by `splice transcode OUT.m3u8
/// --jobs 2` against one ffmpeg writing the same ladder in one process — one decode, a `split`
/// filter, both x264 encoders (each with its own threads), the hls muxer with fMP4 segments of
/// 6 s — on the real clips end to end (`CodecSpeedBenchmark.realClip`, video only). Both sides
/// get the same rate control (an average with a 110 % peak and a two-second buffer), an IDR at
/// every 6 s mark and the encoder's scene cuts between. Runs alternated; medians of wall and CPU,
/// and each side's bytes, so "the same ladder" can be checked. `--repeat N` plays the real clips N
/// times over (a 22·N s source): the rate-control warm-up a later segment encodes is fixed, so
/// its share of the work falls as the source grows.
enum LadderAgainstFFmpeg {
    static let rungs = [(width: 960, height: 540, kbps: 2000), (width: 480, height: 270, kbps: 500)]

    static func run(runs: Int, preset: String, segmentSeconds: Int?, repeats: Int = 1) throws {
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-ladder-ffmpeg-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source.mp4").path
        if repeats > 1 {
            let once = dir.appendingPathComponent("once.mp4").path
            try CodecSpeedBenchmark.realClip(at: once)
            _ = try MeasuredProcess.run(["ffmpeg", "-y", "-v", "error", "-stream_loop", "\(repeats - 1)", "-i", once,
                                         "-c", "copy", source])
        } else {
            try CodecSpeedBenchmark.realClip(at: source)
        }
        let ours = dir.appendingPathComponent("splice"), theirs = dir.appendingPathComponent("ffmpeg")
        let ladder = rungs.map { "\($0.width)x\($0.height)@\($0.kbps)k" }.joined(separator: ",")
        let splice = [Binaries.splice, "transcode", source, ours.appendingPathComponent("out.m3u8").path, "-y",
                      "--jobs", "2", "--no-audio", "--preset", preset, "--ladder", ladder]
            + (segmentSeconds.map { ["--segment-seconds", "\($0)"] } ?? [])
        let split = "[0:v]split=\(rungs.count)" + rungs.indices.map { "[s\($0)]" }.joined() + ";"
            + rungs.enumerated().map { i, r in "[s\(i)]scale=\(r.width):\(r.height):flags=bicubic[v\(i)]" }.joined(separator: ";")
        var ffmpeg = ["ffmpeg", "-y", "-v", "error", "-i", source, "-filter_complex", split]
        for (i, rung) in rungs.enumerated() {
            ffmpeg += ["-map", "[v\(i)]", "-c:v:\(i)", "libx264", "-b:v:\(i)", "\(rung.kbps)k",
                       "-maxrate:v:\(i)", "\(rung.kbps * 11 / 10)k", "-bufsize:v:\(i)", "\(rung.kbps * 2)k"]
        }
        ffmpeg += ["-preset", preset, "-pix_fmt", "yuv420p", "-force_key_frames", "expr:gte(t,n_forced*6)",
                   "-f", "hls", "-hls_time", "6", "-hls_playlist_type", "vod", "-hls_segment_type", "fmp4",
                   "-var_stream_map", rungs.indices.map { "v:\($0)" }.joined(separator: " "),
                   "-master_pl_name", "master.m3u8", theirs.appendingPathComponent("rung_%v.m3u8").path]
        let pairs = try PairedRuns.run(splice, against: ffmpeg, runs: runs, prepare: {
            for folder in [ours, theirs] {
                try? fm.removeItem(at: folder)
                try fm.createDirectory(at: folder, withIntermediateDirectories: true)
            }
        }) { i, t, f in
            print("ladder run \(i + 1)/\(runs): splice \(Stats.milliseconds(t.wallNanoseconds)) (cpu \(t.cpuMicroseconds / 1000) ms), "
                  + "ffmpeg \(Stats.milliseconds(f.wallNanoseconds)) (cpu \(f.cpuMicroseconds / 1000) ms)")
        }
        let (w, fw) = pairs.medianWall
        let (c, fc) = pairs.medianCPU
        let (bytes, theirBytes) = (folderBytes(ours), folderBytes(theirs))
        print("")
        print("ladder against one ffmpeg (the shared real clips end to end" + (repeats > 1 ? " \(repeats) times over" : "")
              + ", 960×540 30 fps \(22 * repeats) s, video only, "
              + "\(ladder), x264 \(preset), HLS fMP4 6 s, splice --jobs 2"
              + (segmentSeconds.map { " --segment-seconds \($0)" } ?? "") + "; \(runs) alternated runs, medians)")
        print("  wall  splice \(Stats.milliseconds(w))  ffmpeg \(Stats.milliseconds(fw))  ratio \(Stats.ratio(w, fw))")
        print("  CPU   splice \(c / 1000) ms  ffmpeg \(fc / 1000) ms  ratio \(Stats.ratio(c, fc))")
        print("  bytes splice \(bytes / 1024) KiB  ffmpeg \(theirBytes / 1024) KiB  ratio \(Stats.ratio(bytes, theirBytes))")
        print("  \(pairs.pairRatioText)")
    }

    /// The bytes of every file under `folder`.
    static func folderBytes(_ folder: URL) -> Int {
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey])
        var total = 0
        while let url = walker?.nextObject() as? URL {
            total += (try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        return total
    }
}
