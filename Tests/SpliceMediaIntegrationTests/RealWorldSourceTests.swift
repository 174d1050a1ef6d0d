import Foundation
import SpliceMedia
import SpliceTestSupport
import Testing

/// Issue 11: what real phone and camera files do to a segment-parallel transcode — wandering
/// audio timestamps, audio that starts after the video, several tracks of every kind, copied
/// tracks, timed metadata, HDR — judged against a single-pass ffmpeg encode decoded by ffmpeg.
@Suite("Real-world sources: samples, every track, pass-through, HDR")
struct RealWorldSourceTests {
    // MARK: - Fixtures

    /// 20 s of 96×64 video and AAC whose timestamps wander like the phone file's: the second
    /// packet stamped 259 instead of 1024, then steps of 1030 and 1032. Lossless-ish AAC (256k,
    /// no noise substitution) so decoding it from a seek point matches a continuous decode.
    static func jitteryPhoneClip() async throws -> String {
        try await Fixtures.generated("jitter.mp4", ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=30:duration=20",
            "-f", "lavfi", "-i", Fixtures.sweepSource(rate: 48000, seconds: "20"), "-map", "0:v", "-map", "1:a",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-b:a", "256k", "-aac_pns", "0",
            "-bsf:a", "setts=ts='if(lte(N,1),PTS,259+(N-2)*1031+mod(N,2))'"])
    }

    /// AAC whose first packet is stamped 3 ms (144 samples) after the video starts, no edit list.
    static func lateAudioClip() async throws -> String {
        try await Fixtures.generated("late-audio.mp4", ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=30:duration=6",
            "-f", "lavfi", "-i", Fixtures.sweepSource(rate: 48000, seconds: "6"), "-map", "0:v", "-map", "1:a",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-b:a", "256k", "-aac_pns", "0", "-bsf:a", "setts=ts=PTS+1168"])
    }

    /// Lossless audio in Matroska, whose timestamps are whole milliseconds.
    static func matroskaClip() async throws -> String {
        try await Fixtures.generated("ms.mkv", ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25:duration=20",
            "-f", "lavfi", "-i", Fixtures.sweepSource(rate: 44100, seconds: "20"), "-map", "0:v", "-map", "1:a",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le"])
    }

    static let subtitles = """
        1
        00:00:00,500 --> 00:00:01,500
        First cue

        2
        00:00:03,500 --> 00:00:04,600
        Spans the join at four seconds

        3
        00:00:07,250 --> 00:00:09,000
        <i>Last</i> cue

        """

    static let chapters = """
        ;FFMETADATA1
        [CHAPTER]
        TIMEBASE=1/1000
        START=0
        END=5000
        title=Opening
        [CHAPTER]
        TIMEBASE=1/1000
        START=5000
        END=10000
        title=Closing

        """

    /// A camera-like MOV: two audio tracks (48 kHz English, default; 44.1 kHz French), SubRip
    /// cues stored as mov_text (one spans the 4 s cut), two chapters and a timecode.
    static func multiTrackMovie() async throws -> String {
        try await Fixtures.generated("multi.mov", extraFiles: ["subs.srt": subtitles, "chapters.txt": chapters], ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25:duration=10",
            "-f", "lavfi", "-i", Fixtures.sweepSource(rate: 48000, seconds: "10"),
            "-f", "lavfi", "-i", "anoisesrc=c=brown:r=44100:d=10:seed=7",
            "-i", "{dir}/subs.srt", "-i", "{dir}/chapters.txt",
            "-map", "0:v", "-map", "1:a", "-map", "2:a", "-map", "3:s", "-map_chapters", "4",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le",
            "-c:s", "mov_text", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra",
            "-disposition:a:0", "default", "-disposition:a:1", "0", "-metadata:s:s:0", "language=eng",
            "-timecode", "01:00:00:00"])
    }

    /// Video with the same cues as SubRip, ASS and WebVTT tracks, in Matroska.
    static func textSubtitlesClip() async throws -> String {
        try await Fixtures.generated("subs.mkv", extraFiles: ["subs.srt": subtitles], ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25:duration=10",
            "-i", "{dir}/subs.srt", "-i", "{dir}/subs.srt", "-i", "{dir}/subs.srt",
            "-map", "0:v", "-map", "1:s", "-map", "2:s", "-map", "3:s",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p",
            "-c:s:0", "srt", "-c:s:1", "ass", "-c:s:2", "webvtt"])
    }

    static let masteringDisplay = "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)"

    /// HDR10: HEVC Main 10, PQ, BT.2020, mastering display and light levels in SEI.
    static func hdr10Clip() async throws -> String {
        try await Fixtures.generated("hdr10.mp4", ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1", "-pix_fmt", "yuv420p10le",
            "-c:v", "libx265", "-preset", "ultrafast",
            "-x265-params", "log-level=error:hdr10=1:master-display=\(masteringDisplay):max-cll=1000,400",
            "-color_primaries", "bt2020", "-color_trc", "smpte2084", "-colorspace", "bt2020nc"])
    }

    // MARK: - Helpers

    struct Outcome {
        var output: String
        var summary: Transcoder.Summary
    }

    /// A segment-parallel transcode of `source` (2 jobs) with what `configure` sets.
    func transcode(_ source: String, to ext: String = "mp4", segmentSeconds: Int64 = 4,
                   configure: (inout TranscodeRequest) -> Void = { _ in }) async throws -> Outcome {
        let dir = Fixtures.temporaryDirectory("real")
        let output = dir.appendingPathComponent("out.\(ext)")
        var request = TranscodeRequest(video: VideoSettings(codec: .h264, quality: 30, preset: "ultrafast"),
                                       audio: AudioSettings(codec: .aac, bitrate: 128_000),
                                       fileType: try #require(OutputFileType(pathExtension: ext)),
                                       segmentDuration: MediaTime(seconds: segmentSeconds))
        configure(&request)
        let summary = try await Transcoder(options: .init(source: source, output: output, request: request, jobs: 2)).run()
        return Outcome(output: output.path, summary: summary)
    }

    /// The same encoder over the whole file, by the ffmpeg CLI: one audio track at 128 kbit/s.
    func ffmpegSinglePass(_ source: String, track: Int = 0) async throws -> String {
        let output = Fixtures.temporaryDirectory("single").appendingPathComponent("single.m4a").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", source, "-map", "0:a:\(track)", "-c:a", "aac",
                                                "-b:a", "128k", output])
        return output
    }

    /// Audio track `track` of `o`: the single pass's length, lag 0 against the source at every
    /// join and at the end, and no block near a join more than 2 dB worse than the single pass's
    /// (after a join the encoder's choices differ block by block; a missing pre-roll costs 5–9 dB).
    func expectSeamless(_ o: Outcome, source: String, track: Int = 0, lead: Int = 0,
                        sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let single = try await ffmpegSinglePass(source, track: track)
        let output = try await AudioAnalysis.decodeMono(o.output, stream: "0:a:\(track)")
        let reference = try await AudioAnalysis.decodeMono(single)
        let original = try await AudioAnalysis.decodeMono(source, stream: "0:a:\(track)")
        #expect(output.count == reference.count, "stitched \(output.count) samples, single pass \(reference.count)",
                sourceLocation: sourceLocation)
        let source = Array(repeating: Float(0), count: lead) + original
        let joins = o.summary.plan.audioSegments(track: track).compactMap { $0.audio?.keepStart }.map { Int($0) + lead }
        #expect(!joins.isEmpty || o.summary.plan.audioSegments(track: track).count == 1, sourceLocation: sourceLocation)
        for join in joins + [min(output.count, source.count) - 2048] {
            let lag = await AudioAnalysis.lag(of: output, against: source, around: join, maxLag: 1100)
            #expect(lag == 0, "lag \(lag) at sample \(join)", sourceLocation: sourceLocation)
        }
        let ours = await AudioAnalysis.blockSNR(output, reference: source)
        let theirs = await AudioAnalysis.blockSNR(reference, reference: source)
        for join in joins {
            for b in max(0, join / 1024 - 2)...min(ours.count - 1, theirs.count - 1, join / 1024 + 1) {
                #expect(ours[b] >= theirs[b] - 2, "block \(b) at the join \(join): \(ours[b]) dB, single pass \(theirs[b]) dB",
                        sourceLocation: sourceLocation)
            }
        }
    }

    /// Text cues as ffmpeg renders a subtitle track to SubRip: (start ms, end ms, text).
    func cues(_ path: String, track: Int = 0) async throws -> [(Int, Int, String)] {
        let srt = try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:s:\(track)", "-f", "srt", "-"]).text
        func ms(_ t: Substring) -> Int {
            let p = t.split(whereSeparator: { ":,".contains($0) }).compactMap { Int($0) }
            return ((p[0] * 60 + p[1]) * 60 + p[2]) * 1000 + p[3]
        }
        return srt.components(separatedBy: "\n\n").compactMap { block in
            let lines = block.split(separator: "\n")
            guard lines.count >= 3, let arrow = lines[1].range(of: " --> ") else { return nil }
            return (ms(lines[1][..<arrow.lowerBound]), ms(lines[1][arrow.upperBound...]), lines[2...].joined(separator: "\n"))
        }
    }

    // MARK: - Audio placed by samples

    @Test func jitteryPhoneTimestampsJoinWithoutAJump() async throws {
        let source = try await Self.jitteryPhoneClip()
        let o = try await transcode(source) { $0.audioSegmentDuration = MediaTime(seconds: 4) }
        #expect(o.summary.plan.audioSegments(track: 0).count == 5)
        // The later segments start mid-file: from anchors, not from the start of the track.
        #expect(o.summary.plan.audioSegments(track: 0).last?.audio?.encodeStart ?? 0 > 0)
        try await expectSeamless(o, source: source)
    }

    @Test func audioThatStartsAfterTheVideoEndsWithTheSource() async throws {
        let source = try await Self.lateAudioClip()
        let o = try await transcode(source, segmentSeconds: 2) { $0.audioSegmentDuration = MediaTime(seconds: 2) }
        #expect(o.summary.plan.audioTracks.first?.lead == 144)
        // Decoded by ffmpeg, the output is as long as a single pass's (priming shows the same 144
        // samples), so its last sample is the source's last.
        try await expectSeamless(o, source: source, lead: 144)
        let packets = try await Probe.packets(o.output, select: "a:0")
        #expect(packets.first?.pts == 144 - 1024)
    }

    @Test func matroskaMillisecondTimestampsJoinExactly() async throws {
        let source = try await Self.matroskaClip()
        let o = try await transcode(source) { $0.audioSegmentDuration = MediaTime(seconds: 4) }
        try await expectSeamless(o, source: source)
    }

    /// The parity figure: 4 s segments at 128 kbit/s (audio segments 4 s too, so there are
    /// joins) against FFmpeg's AAC over the whole file.
    @Test func aacQualityMatchesAWholeFileEncode() async throws {
        let source = try await Fixtures.clip(TranscodeTests.clip(seconds: 30, fps: "25", rate: 48000, width: 96, height: 64))
        let o = try await transcode(source) { $0.audioSegmentDuration = MediaTime(seconds: 4) }
        #expect(o.summary.plan.audioSegments(track: 0).count == 8)
        let original = try await AudioAnalysis.decodeMono(source)
        let ours = AudioAnalysis.median(await AudioAnalysis.blockSNR(try await AudioAnalysis.decodeMono(o.output), reference: original))
        let whole = AudioAnalysis.median(await AudioAnalysis.blockSNR(
            try await AudioAnalysis.decodeMono(try await ffmpegSinglePass(source)), reference: original))
        #expect(ours >= whole - 1, "median block SNR \(ours) dB stitched, \(whole) dB over the whole file")
        try await expectSeamless(o, source: source)
    }

    // MARK: - Every track

    @Test func everyTrackSurvivesTheStitch() async throws {
        let source = try await Self.multiTrackMovie()
        let o = try await transcode(source, segmentSeconds: 2) { $0.audioSegmentDuration = MediaTime(seconds: 2) }
        let probe = try await Probe(o.output)
        let audio = probe.all("audio")
        #expect(audio.map(\.codec_name) == ["aac", "aac"])
        #expect(audio.map(\.sampleRate) == [48000, 44100])
        #expect(audio.map { $0.tags?["language"] } == ["eng", "fra"])
        #expect(audio.map { $0.disposition?["default"] } == [1, 0])
        #expect(probe.first("subtitle")?.codec_name == "mov_text")
        #expect(probe.first("subtitle")?.tags?["language"] == "eng")
        #expect(probe.streams.contains { $0.codec_tag_string == "tmcd" && $0.tags?["timecode"] == "01:00:00:00" })
        let chapters = try await Probe.chapters(o.output)
        #expect(chapters.map(\.title) == ["Opening", "Closing"])
        #expect(chapters.map(\.start) == [0, 5_000_000] && chapters.map(\.end) == [5_000_000, 10_000_000])
        // The cue across the 4 s cut is there once, whole; all cues at their times.
        let theirs = try await cues(source), ours = try await cues(o.output)
        #expect(ours.count == 3)
        #expect(ours.map(\.0) == theirs.map(\.0) && ours.map(\.1) == theirs.map(\.1) && ours.map(\.2) == theirs.map(\.2))
        for track in 0..<2 { try await expectSeamless(o, source: source, track: track) }

        // Matroska keeps SubRip; one track chosen by number, then by language.
        let mkv = try await transcode(source, to: "mkv", segmentSeconds: 2) { $0.audioTracks = .tracks([2]) }
        let m = try await Probe(mkv.output)
        #expect(m.all("audio").map { $0.tags?["language"] } == ["fra"])
        #expect(m.first("subtitle")?.codec_name == "subrip")
        let videoStart = try #require(m.first("video")?.startMicroseconds) / 1000
        #expect(try await cues(mkv.output).map { $0.0 - Int(videoStart) } == theirs.map(\.0))
        let french = try await transcode(source, to: "mp4", segmentSeconds: 2) {
            $0.audioTracks = .languages(["fra"])
            $0.subtitles = .none
            $0.dataTracks = .none
        }
        let f = try await Probe(french.output)
        #expect(f.all("audio").map(\.sampleRate) == [44100] && f.first("subtitle") == nil)
        #expect(!f.streams.contains { $0.codec_tag_string == "tmcd" })
    }

    @Test func textSubtitlesAreConvertedWhereTheContainerNeedsIt() async throws {
        let source = try await Self.textSubtitlesClip()
        let theirs = try await cues(source)
        #expect(theirs.count == 3)
        let mp4 = try await transcode(source, segmentSeconds: 2)
        let probe = try await Probe(mp4.output)
        #expect(probe.all("subtitle").map(\.codec_name) == ["mov_text", "mov_text", "mov_text"])
        for track in 0..<3 {
            let ours = try await cues(mp4.output, track: track)
            #expect(ours.map(\.0) == theirs.map(\.0) && ours.map(\.1) == theirs.map(\.1), "track \(track)")
            #expect(ours.map { $0.2.replacingOccurrences(of: "{\\i1}", with: "<i>").replacingOccurrences(of: "{\\i0}", with: "</i>") }
                    == theirs.map(\.2), "track \(track)")
        }
        // WebM holds WebVTT only; a single-pass export converts the same way.
        let dir = Fixtures.temporaryDirectory("webm")
        let session = ExportSession(asset: try await Asset.open(source), outputURL: dir.appendingPathComponent("out.webm"))
        session.videoSettings = VideoSettings(codec: .vp9, quality: 40, preset: "8")
        try await session.export()
        let webm = dir.appendingPathComponent("out.webm").path
        #expect(try await Probe(webm).all("subtitle").map(\.codec_name) == ["webvtt", "webvtt", "webvtt"])
        #expect(try await cues(webm, track: 1).map(\.0) == theirs.map(\.0))
    }

    // MARK: - Pass-through in segments

    @Test func copiedTracksComeOutBitIdentical() async throws {
        let source = Fixtures.shared("h264_aac_320x240_60fps_5s.mp4")
        let audioCopy = try await transcode(source, segmentSeconds: 1) {
            $0.audio = nil
            $0.copiesAudio = true
        }
        #expect(try await Probe.packetDigests(audioCopy.output, map: "0:a:0") == Probe.packetDigests(source, map: "0:a:0"))
        let editLists = { (path: String) in try MP4Boxes.editLists(path).filter { $0.handler == "soun" }.map { $0.entries.map(\.mediaTime) } }
        #expect(try editLists(audioCopy.output) == editLists(source))
        #expect(audioCopy.summary.stitch.videoFrames == 300)

        let videoCopy = try await transcode(source, segmentSeconds: 1) {
            $0.video = nil
            $0.copiesVideo = true
            $0.audioSegmentDuration = MediaTime(seconds: 1)
        }
        #expect(try await Probe.packetDigests(videoCopy.output, map: "0:v:0") == Probe.packetDigests(source, map: "0:v:0"))
        try await expectSeamless(videoCopy, source: source)
        // Copied video cuts at keyframes only (this file has them at 0 and 4.17 s).
        let ranged = try await transcode(source, segmentSeconds: 1) {
            $0.video = nil
            $0.copiesVideo = true
            $0.range = MediaTimeRange(start: MediaTime(value: 13, timescale: 10), duration: MediaTime(seconds: 2))
        }
        #expect(ranged.summary.plan.outputZero == .zero)
        #expect(ranged.summary.plan.notices.contains { $0.contains("keyframes only") })
        #expect(try await Probe(ranged.output, countFrames: true).first("video")?.readFrames == 250)
    }

    // MARK: - Timed metadata

    /// Sample payloads of a boxed-metadata track, decoded: one value (UTF-8) per non-empty sample.
    func annotationValues(_ path: String, track: Int = 0) async throws -> [String] {
        let bytes = [UInt8](try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:d:\(track)", "-c", "copy",
                                                                   "-f", "data", "-"]).stdout)
        var values: [String] = []
        var o = 0
        while o + 8 <= bytes.count {
            let size = bytes[o..<(o + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8, o + size <= bytes.count else { break }
            values.append(String(decoding: bytes[(o + 8)..<(o + size)], as: UTF8.self))
            o += size
        }
        return values
    }

    @Test func annotationsAreWrittenLikeTheSeedAndSurviveATranscode() async throws {
        let source = Fixtures.shared("h264_aac_320x240_60fps_5s.mp4")
        let dir = Fixtures.temporaryDirectory("annotated")
        let annotated = dir.appendingPathComponent("annotated.mov")
        let session = ExportSession(asset: try await Asset.open(source), outputURL: annotated)
        session.annotations = [
            TimedAnnotation(time: MediaTime(value: 1, timescale: 2), duration: MediaTime(value: 3, timescale: 2), value: "intro"),
            TimedAnnotation(time: MediaTime(value: 5, timescale: 2), duration: MediaTime(seconds: 2), value: "main title – ü"),
        ]
        try await session.export()  // nil settings: video and audio copied, as in the seed
        let probe = try await Probe(annotated.path)
        let data = try #require(probe.first("data"))
        #expect(data.codec_tag_string == "mebx")
        #expect(try await annotationValues(annotated.path) == ["intro", "main title – ü"])
        let timing = try await Probe.packets(annotated.path, select: "d:0").map { [$0.pts ?? -1, $0.duration ?? -1] }
        // Gaps and the stretch after the last annotation are empty samples (no metadata valid).
        #expect(timing == [[0, 500], [500, 1500], [2000, 500], [2500, 2000], [4500, 519]])
        #expect(try await Probe.packetDigests(annotated.path, map: "0:v:0") == Probe.packetDigests(source, map: "0:v:0"))

        // Through a segmented transcode (and a range) the track is copied with its timing.
        let again = try await transcode(annotated.path, segmentSeconds: 1)
        #expect(try await annotationValues(again.output) == ["intro", "main title – ü"])
        #expect(try await Probe.packets(again.output, select: "d:0").map { [$0.pts ?? -1, $0.duration ?? -1] }.prefix(4)
                == timing.prefix(4))
        let cut = try await transcode(annotated.path, segmentSeconds: 1) {
            $0.range = MediaTimeRange(start: MediaTime(seconds: 1), duration: MediaTime(seconds: 3))
        }
        #expect(try await Probe.packets(cut.output, select: "d:0").map { [$0.pts ?? -1, $0.duration ?? -1] }.prefix(3)
                == [[0, 1000], [1000, 500], [1500, 1500]])  // cut at the range's end

        // A camera's own metadata tracks (two mebx) come through as they were.
        let camera = Fixtures.shared("hevc10_bframes_editlist.mp4")
        let copied = try await transcode(camera, segmentSeconds: 1) { $0.video?.width = 160 }
        let empty = "d41d8cd98f00b204e9800998ecf8427e"  // an empty sample (no metadata valid) pads to the movie's end
        for track in 0..<2 {
            #expect(try await Probe.packetDigests(copied.output, map: "0:d:\(track)").filter { $0 != empty }
                    == Probe.packetDigests(camera, map: "0:d:\(track)"))
        }
        #expect(try await Probe(copied.output).all("data").map(\.codec_tag_string) == ["mebx", "mebx"])
    }

    // MARK: - HDR

    @Test func hdr10StaysHDRAndEightBitNeedsToneMapping() async throws {
        let source = try await Self.hdr10Clip()
        let hevc = try await transcode(source, segmentSeconds: 1) { $0.video = VideoSettings(codec: .hevc, preset: "ultrafast") }
        let v = try #require(await Probe(hevc.output).first("video"))
        #expect(v.pix_fmt == "yuv420p10le" && v.profile == "Main 10")
        #expect([v.color_primaries, v.color_transfer, v.color_space] == ["bt2020", "smpte2084", "bt2020nc"])
        #expect(v.sideData("Mastering display metadata")?.max_luminance == "10000000/10000")  // MP4 mdcv
        #expect(v.sideData("Content light level metadata")?.max_content == 1000)           // MP4 clli
        let frames = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v", "-read_intervals", "%+#1",
                                                              "-show_frames", hevc.output]).text
        #expect(frames.contains("side_data_type=Mastering display metadata") && frames.contains("max_content=1000"))

        let h264 = try await transcode(source, to: "mkv", segmentSeconds: 1)
        let w = try #require(await Probe(h264.output).first("video"))
        #expect(w.pix_fmt == "yuv420p10le" && w.profile == "High 10" && w.color_transfer == "smpte2084")
        #expect(w.sideData("Mastering display metadata") != nil)  // Matroska MasteringMetadata
        let sei = try await ExternalTool.run("ffmpeg", ["-i", h264.output, "-c", "copy", "-bsf:v", "trace_headers", "-f", "null", "-"])
        #expect(sei.stderr.contains("Mastering Display Colour Volume") && sei.stderr.contains("Content Light Level Information"))

        // VP9 profile 2 and AV1 carry it in the container (and SVT-AV1 in its metadata OBUs).
        for (codec, ext, preset, profile) in [(VideoSettings.Codec.vp9, "webm", "8", "Profile 2"), (.av1, "mkv", "12", "Main")] {
            let o = try await transcode(source, to: ext, segmentSeconds: 1) {
                $0.video = VideoSettings(codec: codec, quality: 40, preset: preset)
                $0.audio = nil
            }
            let x = try #require(await Probe(o.output).first("video"))
            #expect(x.pix_fmt == "yuv420p10le" && x.profile == profile && x.color_transfer == "smpte2084", "\(codec)")
            #expect(x.sideData("Mastering display metadata")?.max_luminance == "1000/1", "\(codec)")
            #expect(x.sideData("Content light level metadata")?.max_content == 1000, "\(codec)")
        }

        await #expect { _ = try await transcode(source, segmentSeconds: 1) { $0.video?.pixelFormat = "yuv420p" } } throws: {
            ($0 as? SettingsError)?.field == "pixel-format" && "\($0)".contains("--tone-map")
        }
        let sdr = try await transcode(source, segmentSeconds: 1) { $0.video?.toneMap = true }
        let s = try #require(await Probe(sdr.output).first("video"))
        #expect(s.pix_fmt == "yuv420p" && [s.color_primaries, s.color_transfer, s.color_space] == ["bt709", "bt709", "bt709"])
        #expect(s.sideData("Mastering display metadata") == nil)
    }

    // MARK: - The real clips

    @Test(arguments: Fixtures.allShared.filter { !$0.contains("362s") && !$0.contains("bpyramid") })
    func everyRealClipTranscodesLikeASinglePass(path: String) async throws {
        let o = try await transcode(path, segmentSeconds: 1) {
            $0.video?.width = 160
            $0.audioSegmentDuration = MediaTime(seconds: 1)
        }
        let source = try await Probe(path, countFrames: true), output = try await Probe(o.output, countFrames: true)
        #expect(output.first("video")?.readFrames == source.first("video")?.readFrames)
        if source.first("audio") != nil {
            let ours = try await AudioAnalysis.decodeMono(o.output)
            let theirs = try await AudioAnalysis.decodeMono(try await ffmpegSinglePass(path))
            #expect(ours.count == theirs.count, "\(ours.count) samples, single pass \(theirs.count)")
        }
    }
}
