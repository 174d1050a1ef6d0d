import Foundation
import SpliceMedia
import SpliceTestSupport
import Testing

/// Exports checked by decoding what was written with ffprobe/ffmpeg.
@Suite("Export session")
struct ExportTests {
    static let clip = Fixtures.ClipSpec(seconds: "2", width: 320, height: 240, frameRate: "30")

    private func export(_ source: String, to name: String, video: VideoSettings? = VideoSettings(codec: .h264, quality: 30, preset: "ultrafast"),
                        audio: AudioSettings? = AudioSettings(codec: .aac), range: MediaTimeRange? = nil,
                        configure: (ExportSession) -> Void = { _ in }) async throws -> (String, ExportSession) {
        let dir = Fixtures.temporaryDirectory("export")
        let output = dir.appendingPathComponent(name).path
        let session = ExportSession(asset: try await Asset.open(source), outputURL: URL(fileURLWithPath: output))
        session.videoSettings = video
        session.audioSettings = audio
        session.timeRange = range
        configure(session)
        try await session.export()
        return (output, session)
    }

    private func frameCount(_ path: String) async throws -> Int {
        try #require(await Probe(path, countFrames: true).first("video")?.readFrames)
    }

    @Test(arguments: [
        (VideoSettings.Codec.h264, "mp4", "h264"), (.hevc, "mp4", "hevc"), (.vp9, "webm", "vp9"),
        (.av1, "mkv", "av1"), (.prores, "mov", "prores"),
    ])
    func encodesEveryVideoCodec(codec: VideoSettings.Codec, container: String, probeName: String) async throws {
        let source = try await Fixtures.clip(Self.clip)
        let audio = AudioSettings(codec: container == "webm" ? .opus : (container == "mov" ? .pcm : .aac))
        let (out, session) = try await export(source, to: "out.\(container)", video: VideoSettings(codec: codec, width: 160),
                                              audio: audio)
        let probe = try await Probe(out, countFrames: true)
        let video = try #require(probe.first("video"))
        #expect(video.codec_name == probeName)
        #expect(video.width == 160 && video.height == 120)
        #expect(video.readFrames == 60)
        #expect(session.status == .completed && session.summary?.videoFrames == 60)
        #expect(session.progress == 1)
    }

    /// `--video-encoder`: AV1 by libaom instead of SVT-AV1. FFmpeg's `trace_headers` reads the
    /// sequence header each wrote: libaom turns on the tools SVT-AV1 leaves off at its preset 8
    /// (warped motion, filter intra), which tells the two apart.
    @Test func av1ByTheEncoderAskedFor() async throws {
        let source = try await Fixtures.clip(Self.clip)
        func sequenceHeader(_ path: String) async throws -> [String: Int] {
            let trace = try await ExternalTool.run("ffmpeg", ["-hide_banner", "-v", "trace", "-i", path, "-map", "0:v",
                                                              "-c", "copy", "-bsf:v", "trace_headers", "-f", "null", "-"])
            var fields: [String: Int] = [:]
            for line in trace.stderr.split(separator: "\n") where line.contains("trace_headers") {
                let words = line.split(separator: " ")
                if words.count >= 4, let name = words.dropFirst().first(where: { $0.hasPrefix("enable_") }),
                   let value = words.last.flatMap({ Int($0) }), fields[String(name)] == nil {
                    fields[String(name)] = value
                }
            }
            return fields
        }
        var fields: [String: [String: Int]] = [:]
        for encoder in ["libaom-av1", "libsvtav1"] {
            let (out, session) = try await export(source, to: "\(encoder).mkv",
                                                  video: VideoSettings(codec: .av1, width: 160, preset: "8", encoder: encoder),
                                                  audio: nil)
            #expect(session.status == .completed)
            let video = try #require(try await Probe(out, countFrames: true).first("video"))
            #expect(video.codec_name == "av1" && video.readFrames == 60)
            fields[encoder] = try await sequenceHeader(out)
        }
        #expect(fields["libaom-av1"]?["enable_warped_motion"] == 1, "\(fields)")
        #expect(fields["libsvtav1"]?["enable_warped_motion"] == 0, "\(fields)")
        // Asked for an encoder of another codec: refused before anything is written.
        let error = await #expect(throws: SettingsError.self) {
            _ = try await export(source, to: "x.mkv", video: VideoSettings(codec: .av1, encoder: "libx265"), audio: nil)
        }
        #expect(error?.field == "video-encoder")
    }

    @Test(arguments: [(AudioSettings.Codec.aac, "mp4", "aac", 44100), (.opus, "mkv", "opus", 48000), (.pcm, "mov", "pcm_s16le", 32000)])
    func encodesEveryAudioCodec(codec: AudioSettings.Codec, container: String, probeName: String, rate: Int) async throws {
        let source = try await Fixtures.clip(Self.clip)
        let settings = AudioSettings(codec: codec, sampleRate: rate, channels: 1)
        let (out, _) = try await export(source, to: "a.\(container)", audio: settings)
        let audio = try #require(await Probe(out).first("audio"))
        #expect(audio.codec_name == probeName)
        #expect(audio.sampleRate == rate)
        #expect(audio.channels == 1)
        // Two seconds of audio survive resampling to within one packet.
        let decoded = try await decodedSamples(out)
        #expect(abs(decoded - 2 * rate) <= 1024, "decoded \(decoded) samples")
    }

    @Test func aacOutputStartsAtSourceSampleZeroThroughAnEditList() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let (out, _) = try await export(source, to: "delay.mp4")
        let audio = try #require(await Probe(out).first("audio"))
        #expect(audio.start_time == "0.000000")
        let packets = try await Probe.packets(out, select: "a:0")
        #expect(packets.first?.pts == -1024)
        #expect(packets.first?.dts == -1024)
    }

    @Test func passThroughCopiesPacketsAndTheDisplayMatrix() async throws {
        let source = Fixtures.shared("h264_aac44k_720p_rotated90.mp4")
        let (out, _) = try await export(source, to: "copy.mp4", video: nil, audio: nil)
        let src = try await Probe(source), dst = try await Probe(out)
        #expect(dst.first("video")?.codec_name == "h264" && dst.first("audio")?.codec_name == "aac")
        #expect(dst.first("video")?.rotation == src.first("video")?.rotation)
        #expect(dst.first("video")?.width == 1280)
        #expect(try await Probe.packets(out, select: "v:0").count == Probe.packets(source, select: "v:0").count)
        #expect(try await Probe.packets(out, select: "a:0").count == Probe.packets(source, select: "a:0").count)
    }

    @Test func reencodingTurnsARotatedSourceUpright() async throws {
        let source = Fixtures.shared("h264_aac44k_720p_rotated90.mp4")
        let (out, _) = try await export(source, to: "upright.mp4", video: VideoSettings(codec: .h264, height: 640, preset: "ultrafast"))
        let video = try #require(await Probe(out).first("video"))
        #expect(video.width == 360 && video.height == 640)
        #expect(video.rotation == 0)
    }

    @Test func timeRangesAreFrameExact() async throws {
        // The clip has a keyframe every 30 frames; 0.5 s starts mid-GOP.
        let source = try await Fixtures.clip(Self.clip)
        let range = MediaTimeRange(start: MediaTime(value: 1, timescale: 2), duration: MediaTime(seconds: 1))
        let (out, session) = try await export(source, to: "range.mp4", range: range)
        #expect(try await frameCount(out) == 30)
        #expect(session.summary?.videoFrames == 30)
        let probe = try await Probe(out)
        #expect(probe.first("video")?.durationMicroseconds == 1_000_000)
        // One second of 48 kHz audio, cut to the sample.
        #expect(session.summary?.audioSamples == 48000)
        // The first frame shown is source frame 15: compare against the source decoded at 0.5 s.
        #expect(try await firstFramesMatch(out, source: source, sourceStart: "0.5"))
    }

    @Test func rangesDeepInsideALongGOPDecodeFromTheKeyframeBefore() async throws {
        // The shared long-GOP file (keyframes 8.3 s apart) is black, so frame counts tell; a
        // generated 20 s GOP with moving content shows the right frames come out.
        let long = Fixtures.shared("h264_1080p30_362s_videoonly.mp4")
        let range = MediaTimeRange(start: MediaTime(seconds: 105), duration: MediaTime(seconds: 2))
        let (deep, _) = try await export(long, to: "deep.mp4", video: VideoSettings(codec: .h264, width: 320, preset: "ultrafast"),
                                         range: range)
        #expect(try await frameCount(deep) == 60)
        #expect(try await Probe(deep).first("video")?.durationMicroseconds == 2_000_000)

        let spec = Fixtures.ClipSpec(seconds: "30", sampleRate: nil,
                                     videoCodec: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "600", "-pix_fmt", "yuv420p"])
        let source = try await Fixtures.clip(spec)
        let (out, _) = try await export(source, to: "gop.mp4", audio: nil,
                                        range: MediaTimeRange(start: MediaTime(seconds: 25), duration: MediaTime(seconds: 2)))
        #expect(try await frameCount(out) == 60)
        #expect(try await firstFramesMatch(out, source: source, sourceStart: "25"))
    }

    @Test func variableFrameRateTimestampsAreKept() async throws {
        // Keep frames 0,3,6,… plus 10 and 11 of a 30 fps pattern: irregular steps.
        let spec = Fixtures.ClipSpec(seconds: "2", sampleRate: nil,
                                     extraVideoFilter: "select='not(mod(n\\,3))+eq(n\\,10)+eq(n\\,11)'",
                                     extraOutputArgs: ["-fps_mode", "vfr"])
        let source = try await Fixtures.clip(spec)
        let (out, _) = try await export(source, to: "vfr.mp4", audio: nil)
        let micros: (String) async throws -> [Int64] = { path in
            let tb = try #require(await Probe(path).first("video")?.time_base)
            let parts = tb.split(separator: "/").compactMap { Int64($0) }
            return try await Probe.frames(path, select: "v:0").compactMap(\.best_effort_timestamp).map { $0 * 1_000_000 * parts[0] / parts[1] }
        }
        let a = try await micros(source), b = try await micros(out)
        #expect(a.count == 22)
        #expect(a == b)
    }

    @Test func editListInputKeepsOnlyThePresentedFrames() async throws {
        let source = Fixtures.shared("hevc10_bframes_editlist.mp4")
        let (out, _) = try await export(source, to: "edit.mp4", video: VideoSettings(codec: .h264, width: 270, preset: "ultrafast"))
        #expect(try await frameCount(out) == frameCount(source))
    }

    @Test func surroundIsDownmixedToStereo() async throws {
        let source = Fixtures.shared("vp9_vorbis51_540p.webm")
        let (out, _) = try await export(source, to: "stereo.mp4", video: VideoSettings(codec: .h264, width: 320, preset: "ultrafast"),
                                        audio: AudioSettings(codec: .aac, channels: 2))
        let audio = try #require(await Probe(out).first("audio"))
        #expect(audio.channels == 2)
        #expect(audio.channel_layout == "stereo")
        #expect(try await meanVolume(out) > -50, "the downmix must not be silent")
    }

    @Test func pcmMOVInputBecomesAAC() async throws {
        let source = Fixtures.shared("h264_pcm_1080p50.mov")
        let (out, session) = try await export(source, to: "pcm.mp4", video: VideoSettings(codec: .h264, width: 320, preset: "ultrafast"))
        #expect(session.summary?.audioSamples == 96000)
        #expect(try await frameCount(out) == 100)
        // FFmpeg does not trim the last AAC packet's padding on decode, so up to one packet more.
        let decoded = try await decodedSamples(out)
        #expect(try await decodedSamples(source) == 96000)
        #expect(decoded >= 96000 && decoded < 96000 + 1024)
    }

    @Test func oddSizesAreRoundedAndReported() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let (out, session) = try await export(source, to: "odd.mp4", video: VideoSettings(codec: .h264, width: 161, preset: "ultrafast"))
        let video = try #require(await Probe(out).first("video"))
        #expect(video.width == 162 && video.height! % 2 == 0)
        #expect(session.summary?.notices.contains { $0.contains("161") && $0.contains("162") } == true)
    }

    @Test func metadataAndFastStartAreWritten() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let (out, _) = try await export(source, to: "tags.mp4") { s in
            s.metadata = ["title": "Splice \"quoted\" title", "comment": "made by a test"]
            s.optimizesForNetworkUse = true
        }
        let probe = try await Probe(out)
        #expect(probe.format.tags?["title"] == "Splice \"quoted\" title")
        let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: out)).readData(ofLength: 4096)
        let moov = head.range(of: Data("moov".utf8)), mdat = head.range(of: Data("mdat".utf8))
        #expect(moov != nil && (mdat == nil || moov!.lowerBound < mdat!.lowerBound))
    }

    // MARK: - Failures leave nothing behind

    @Test func cancellingMidExportRemovesThePartialFile() async throws {
        let source = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "20", width: 640, height: 360))
        let dir = Fixtures.temporaryDirectory("cancel")
        let output = dir.appendingPathComponent("cancelled.mp4")
        let session = ExportSession(asset: try await Asset.open(source), outputURL: output)
        session.videoSettings = VideoSettings(codec: .h264, preset: "medium")
        session.audioSettings = AudioSettings(codec: .aac)
        let watcher = Task {
            for await p in session.progressUpdates where p > 0.05 {
                session.cancel()
                break
            }
        }
        await #expect {
            try await session.export()
        } throws: { ($0 as? MediaError)?.code == .cancelled }
        _ = await watcher.value
        #expect(session.status == .cancelled)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test func aTruncatedInputFailsWithoutLeavingOutput() async throws {
        // With the index first (faststart), a cut-off copy opens but runs out of data mid-way.
        let dir = Fixtures.temporaryDirectory("trunc")
        let whole = dir.appendingPathComponent("whole.mp4").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", Fixtures.shared("h264_aac_320x240_60fps_5s.mp4"),
                                          "-c", "copy", "-movflags", "+faststart", whole])
        let data = try Data(contentsOf: URL(fileURLWithPath: whole))
        let cut = dir.appendingPathComponent("cut.mp4").path
        _ = FileManager.default.createFile(atPath: cut, contents: data.prefix(data.count / 2))
        let output = dir.appendingPathComponent("out.mp4")
        let session = ExportSession(asset: try await Asset.open(cut), outputURL: output)
        session.videoSettings = VideoSettings(codec: .h264, preset: "ultrafast")
        session.audioSettings = AudioSettings(codec: .aac)
        await #expect {
            try await session.export()
        } throws: { error in
            guard let e = error as? MediaError else { return false }
            return (e.code == .invalidMedia || e.code == .decodeFailed) && e.description.contains("cut.mp4")
        }
        #expect(session.status == .failed)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)) == ["whole.mp4", "cut.mp4"])
    }

    @Test func anExistingOutputIsKeptUnlessOverwritingIsAllowedAndTheSourceAlways() async throws {
        let source = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "1", width: 160, height: 120))
        let dir = Fixtures.temporaryDirectory("existing")
        let output = dir.appendingPathComponent("out.mp4")
        let precious = Data("someone's earlier work".utf8)
        try precious.write(to: output)
        func session(to url: URL, overwrite: Bool) async throws -> ExportSession {
            let session = ExportSession(asset: try await Asset.open(source), outputURL: url)
            session.videoSettings = VideoSettings(codec: .h264, preset: "ultrafast")
            session.includesAudio = false
            session.overwritesExistingFile = overwrite
            return session
        }
        let refused = try await session(to: output, overwrite: false)
        await #expect {
            try await refused.export()
        } throws: { ($0 as? MediaError)?.code == .outputExists && "\($0)".contains(output.path) }
        #expect(refused.status == .failed && refused.progress == 0)
        #expect(try Data(contentsOf: output) == precious)

        let allowed = try await session(to: output, overwrite: true)
        try await allowed.export()
        #expect(try await Probe(output.path).first("video")?.codec_name == "h264")

        // Never the source, even when overwriting is allowed.
        let copy = dir.appendingPathComponent("source.mp4")
        try FileManager.default.copyItem(atPath: source, toPath: copy.path)
        let original = try Data(contentsOf: copy)
        let ontoItself = ExportSession(asset: try await Asset.open(copy.path), outputURL: copy)
        ontoItself.overwritesExistingFile = true
        await #expect {
            try await ontoItself.export()
        } throws: { ($0 as? MediaError)?.code == .invalidSettings && "\($0)".contains("is the input") }
        #expect(try Data(contentsOf: copy) == original)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)) == ["out.mp4", "source.mp4"])
    }

    @Test func anOutputFolderThatDoesNotExistIsAClearError() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let session = ExportSession(asset: try await Asset.open(source), outputURL: URL(fileURLWithPath: "/nonexistent/dir/out.mp4"))
        session.videoSettings = VideoSettings(codec: .h264)
        await #expect {
            try await session.export()
        } throws: { ($0 as? MediaError)?.code == .writeFailed && "\($0)".contains("/nonexistent/dir") }
    }

    @Test func invalidSettingsFailBeforeAnythingIsWritten() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let dir = Fixtures.temporaryDirectory("invalid")
        for bad in [VideoSettings(codec: .h264, width: 0), VideoSettings(codec: .h264, width: -640)] {
            let session = ExportSession(asset: try await Asset.open(source), outputURL: dir.appendingPathComponent("x.mp4"))
            session.videoSettings = bad
            await #expect {
                try await session.export()
            } throws: { ($0 as? SettingsError)?.field == "width" }
            #expect(session.error?.code == .invalidSettings)
        }
        let session = ExportSession(asset: try await Asset.open(source), outputURL: dir.appendingPathComponent("x.avi"))
        await #expect(throws: SettingsError.self) { try await session.export() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    // MARK: - Every shared clip becomes an upright H.264/AAC MP4

    @Test(arguments: Fixtures.allShared.filter { !$0.contains("362s") })
    func everySharedFileExportsToH264AAC(path: String) async throws {
        let asset = try await Asset.open(path)
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let (out, _) = try await export(path, to: "\(name).mp4", video: VideoSettings(codec: .h264, preset: "ultrafast"))
        let source = try await Probe(path, countFrames: true), result = try await Probe(out, countFrames: true)
        let sv = try #require(source.first("video")), rv = try #require(result.first("video"))
        #expect(rv.codec_name == "h264")
        #expect(rv.readFrames == sv.readFrames)
        #expect(rv.rotation == 0)
        // Upright at the stored size: an anamorphic source (the B-pyramid clip, 800×640 at 64:45)
        // keeps its pixels and says their aspect ratio, as one ffmpeg does.
        let track = try #require(asset.videoTrack)
        let (width, height) = try (#require(track.width), #require(track.height))
        let stored = track.rotation % 180 == 0 ? (width: width, height: height) : (width: height, height: width)
        #expect(rv.width == stored.width + stored.width % 2 && rv.height == stored.height + stored.height % 2)
        if let sar = track.sampleAspectRatio {
            let upright = track.rotation % 180 == 0 ? sar : Rational(sar.denominator, sar.numerator)
            #expect(rv.sample_aspect_ratio == "\(upright.numerator):\(upright.denominator)")
        }
        if source.first("audio") != nil { #expect(result.first("audio")?.codec_name == "aac") }
        // Duration within one frame of the source's presented video.
        let frameMicros = try #require(asset.videoTrack?.frameRate).reciprocalDuration.converted(to: 1_000_000).value
        let sourceMicros = try await videoSpanMicros(path), resultMicros = try await videoSpanMicros(out)
        #expect(abs(sourceMicros - resultMicros) <= frameMicros, "source \(sourceMicros) µs, output \(resultMicros) µs")
    }

    // MARK: - Oracles

    /// First-to-last presented frame span plus one frame, from decoded frame timestamps.
    private func videoSpanMicros(_ path: String) async throws -> Int64 {
        let tb = try #require(await Probe(path).first("video")?.time_base).split(separator: "/").compactMap { Int64($0) }
        let stamps = try await Probe.frames(path, select: "v:0").compactMap(\.best_effort_timestamp).sorted()
        guard let first = stamps.first, let last = stamps.last, stamps.count > 1 else { return 0 }
        let step = (last - first) / Int64(stamps.count - 1)
        return (last - first + step) * 1_000_000 * tb[0] / tb[1]
    }

    /// Samples per channel ffmpeg decodes from the first audio track.
    private func decodedSamples(_ path: String) async throws -> Int {
        let out = try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-ac", "1", "-f", "s16le", "-"])
        return out.stdout.count / 2
    }

    private func meanVolume(_ path: String) async throws -> Int {
        let out = try await ExternalTool.run("ffmpeg", ["-hide_banner", "-i", path, "-map", "0:a:0", "-af", "volumedetect", "-f", "null", "-"])
        let line = try #require(out.stderr.split(separator: "\n").first { $0.contains("mean_volume") })
        let value = line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces).split(separator: " ").first!
        return Int(value.split(separator: ".").first!) ?? -100
    }

    /// Whether the output's first 3 frames are closest (PSNR) to the source's frames at the same
    /// positions rather than one before or after: no frame dropped, duplicated or shifted.
    private func firstFramesMatch(_ output: String, source: String, sourceStart: String, scale: String? = nil) async throws -> Bool {
        let filter = scale.map { "scale=\($0)," } ?? ""
        let grab: (String, [String]) async throws -> [Data] = { path, seek in
            let out = try await ExternalTool.check("ffmpeg", ["-v", "error"] + seek + ["-i", path, "-frames:v", "4",
                                                                                "-vf", "\(filter)format=gray", "-f", "rawvideo", "-"])
            let frames = 4
            let size = out.stdout.count / frames
            return (0..<frames).map { out.stdout.subdata(in: ($0 * size)..<(($0 + 1) * size)) }
        }
        let ours = try await grab(output, [])
        let theirs = try await grab(source, ["-ss", sourceStart])
        for i in 0..<3 {
            let same = meanAbsoluteDifference(ours[i], theirs[i])
            let next = meanAbsoluteDifference(ours[i], theirs[i + 1])
            if same >= next { return false }
        }
        return true
    }

    private func meanAbsoluteDifference(_ a: Data, _ b: Data) -> Int {
        guard a.count == b.count, !a.isEmpty else { return Int.max }
        var total = 0
        for i in 0..<a.count { total += abs(Int(a[i]) - Int(b[i])) }
        return total * 1000 / a.count
    }
}
