import Foundation
import SpliceCore
import SpliceMedia
import SpliceTestSupport
import Testing

/// Streaming packages (`transcode OUT.m3u8`), judged by ffmpeg/ffprobe reading what was written:
/// every rung frame-exact, IDR pictures at the same segment starts in every rung, the audio
/// rendition gapless against a single pass, playlist fields that agree with the files.
@Suite("Streaming packages")
struct PackageTests {
    /// 13 s at 25 fps with lossless non-periodic audio (see ``TranscodeTests/clip``).
    static let clip = TranscodeTests.clip(seconds: 13, fps: "25", rate: 48000, width: 320, height: 180)
    static let grid: Int64 = 4

    struct Package {
        var dir: URL
        var master: String
        var summary: Transcoder.Summary
    }

    func makePackage(dash: Bool = true, ladder: [LadderRung], preset: String = "veryfast", overwrite: Bool = false,
                     in dir: URL = Fixtures.temporaryDirectory("package"), keepSegmentsIn kept: URL? = nil) async throws -> Package {
        let source = try await Fixtures.clip(Self.clip)
        let master = dir.appendingPathComponent("show.m3u8")
        let request = TranscodeRequest(
            video: VideoSettings(codec: .h264, preset: preset), audio: AudioSettings(codec: .aac), fileType: .mp4,
            segmentDuration: MediaTime(seconds: 8), overwrite: overwrite, audioSegmentDuration: MediaTime(seconds: 4),
            package: PackageRequest(ladder: ladder, segmentDuration: MediaTime(seconds: Self.grid), hls: true, dash: dash))
        let summary = try await Transcoder(options: .init(source: source, output: master, request: request, jobs: 2,
                                                          keepSegmentsIn: kept)).run()
        return Package(dir: dir, master: master.path, summary: summary)
    }

    static let twoRungs = [LadderRung(width: 320, height: 180, bitrate: 400_000), LadderRung(width: 160, height: 90, bitrate: 120_000)]

    /// `#EXTINF` durations (µs) and URIs of a media playlist, and its tags.
    func mediaPlaylist(_ path: String) throws -> (tags: [String], segments: [(duration: Int64, uri: String)]) {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        var segments: [(Int64, String)] = []
        for (i, line) in lines.enumerated() where line.hasPrefix("#EXTINF:") {
            let value = String(line.dropFirst("#EXTINF:".count).split(separator: ",")[0])
            segments.append((try #require(Probe.microseconds(value)), lines[i + 1]))
        }
        return (lines.filter { $0.hasPrefix("#") && !$0.hasPrefix("#EXTINF") }, segments)
    }

    /// `KEY=VALUE` attributes of a playlist tag line (quoted values unquoted).
    func attributes(_ line: String) -> [String: String] {
        var out: [String: String] = [:]
        var rest = Substring(line.drop { $0 != ":" }.dropFirst())
        while !rest.isEmpty {
            let key = String(rest.prefix { $0 != "=" })
            rest = rest.dropFirst(key.count + 1)
            var value: Substring
            if rest.first == "\"" {
                value = rest.dropFirst().prefix { $0 != "\"" }
                rest = rest.dropFirst(value.count + 2)
            } else {
                value = rest.prefix { $0 != "," }
                rest = rest.dropFirst(value.count)
            }
            if rest.first == "," { rest = rest.dropFirst() }
            out[key] = String(value)
        }
        return out
    }

    /// Each segment's `tfdt` (baseMediaDecodeTime), read from the files.
    func decodeTimes(_ folder: String, _ segments: [(duration: Int64, uri: String)]) throws -> [Int64] {
        try segments.map { s in
            let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/" + s.uri)))
            let marker = Array("tfdt".utf8)
            let at = try #require((0..<(data.count - 16)).first { Array(data[$0..<($0 + 4)]) == marker })
            let version = data[at + 4]
            let bytes = data[(at + 8)..<(at + 8 + (version == 1 ? 8 : 4))]
            return bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
    }

    /// The audio of `path` decoded by ffmpeg as it presents it: timestamps kept, what lies before
    /// presentation time zero (what the init segment's edit list hides) trimmed.
    func presentedAudio(_ path: String) async throws -> [Float] {
        let out = try await ExternalTool.check("ffmpeg", ["-v", "error", "-copyts", "-i", path, "-map", "0:a:0",
                                                          "-af", "atrim=start=0", "-ac", "1", "-f", "f32le", "-"])
        return out.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    @Test("every rung decodes frame-exact, with IDR pictures at the same segment starts; playlists agree with the files")
    func ladder() async throws {
        let package = try await makePackage(ladder: Self.twoRungs)
        let source = try await Fixtures.clip(Self.clip)
        let sourceFrames = try #require(try await Probe(source, countFrames: true).first("video")?.readFrames)
        #expect(sourceFrames == 13 * 25)

        let masterLines = try String(contentsOfFile: package.master, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(masterLines.contains("#EXT-X-INDEPENDENT-SEGMENTS"))
        let media = try #require(masterLines.first { $0.hasPrefix("#EXT-X-MEDIA:") })
        let audioAttributes = attributes(media)
        #expect(audioAttributes["TYPE"] == "AUDIO" && audioAttributes["NAME"] != nil && audioAttributes["GROUP-ID"] == "audio")
        let audioPlaylist = package.dir.appendingPathComponent(try #require(audioAttributes["URI"])).path
        let audioFolder = (audioPlaylist as NSString).deletingLastPathComponent

        // The audio rendition's own peak and average, from its files.
        let audio = try mediaPlaylist(audioPlaylist)
        // The peak as RFC 8216 defines it: the largest rate of any run of consecutive segments
        // lasting 0.5 to 1.5 times the target duration (the clip's 1 s last segment only with the
        // one before it).
        func rates(_ folder: String, _ list: (tags: [String], segments: [(duration: Int64, uri: String)]))
            throws -> (peak: Int64, average: Int64) {
            let target = try #require(list.tags.first { $0.hasPrefix("#EXT-X-TARGETDURATION:") }
                .flatMap { Int64($0.dropFirst("#EXT-X-TARGETDURATION:".count)) }) * 1_000_000
            let sizes = try list.segments.map { s in
                try #require(try FileManager.default.attributesOfItem(atPath: folder + "/" + s.uri)[.size] as? Int64)
            }
            var peak: Int64 = 0
            for i in sizes.indices {
                for j in i..<sizes.count {
                    let duration = list.segments[i...j].reduce(0) { $0 + $1.duration }
                    guard 2 * duration <= 3 * target else { break }
                    if 2 * duration >= target { peak = max(peak, sizes[i...j].reduce(0, +) * 8 * 1_000_000 / duration) }
                }
            }
            let duration = list.segments.reduce(0) { $0 + $1.duration }
            #expect(peak > 0, "no run of segments lasts 0.5 to 1.5 times the target duration")
            return (peak, sizes.reduce(0, +) * 8 * 1_000_000 / duration)
        }
        let audioRates = try rates(audioFolder, audio)

        var keyframeTimes: [[Int64]] = []
        let variants = masterLines.indices.filter { masterLines[$0].hasPrefix("#EXT-X-STREAM-INF:") }
        #expect(variants.count == 2)
        for i in variants {
            let info = attributes(masterLines[i])
            let playlist = package.dir.appendingPathComponent(masterLines[i + 1]).path
            let folder = (playlist as NSString).deletingLastPathComponent
            let probe = try await Probe(playlist, countFrames: true)
            let video = try #require(probe.first("video"))
            #expect(video.readFrames == sourceFrames, "\(playlist) decodes to \(video.readFrames ?? -1) frames")
            #expect(info["RESOLUTION"] == "\(video.width ?? 0)x\(video.height ?? 0)")
            #expect(info["FRAME-RATE"] == "25.000")
            #expect(info["AUDIO"] == "audio")

            // CODECS: profile and level bytes as ffprobe reads them from the stream.
            let fields = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                  "stream=profile,level", "-of", "csv=p=0", playlist])
            let firstLine = try #require(String(decoding: fields.stdout, as: UTF8.self).split(separator: "\n").first)
            let parts = firstLine.split(separator: ",")
            let profileIDC = ["Constrained Baseline": 66, "Baseline": 66, "Main": 77, "High": 100][String(parts[0])]
            let codecs = try #require(info["CODECS"]).split(separator: ",").map(String.init)
            #expect(codecs.count == 2 && codecs[1] == "mp4a.40.2")
            let avc = codecs[0]
            #expect(avc.hasPrefix("avc1.") && avc.count == 11)
            #expect(Int(avc.dropFirst(5).prefix(2), radix: 16) == profileIDC)
            #expect(Int(avc.suffix(2), radix: 16) == Int(parts[1]))

            // Media playlist: tags, durations within the target, totals, and each segment file
            // starting with a keyframe at the playlist's time for it.
            let list = try mediaPlaylist(playlist)
            for tag in ["#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"init.mp4\"",
                        "#EXT-X-VERSION:6", "#EXT-X-ENDLIST"] {
                #expect(list.tags.contains(tag), "\(playlist) lacks \(tag)")
            }
            let target = try #require(list.tags.first { $0.hasPrefix("#EXT-X-TARGETDURATION:") }.flatMap { Int64($0.split(separator: ":")[1]) })
            #expect(list.segments.allSatisfy { ($0.duration + 500_000) / 1_000_000 <= target })
            #expect(target == Self.grid)
            #expect(list.segments.reduce(0) { $0 + $1.duration } == 13_000_000)
            var start: Int64 = 0
            let initData = try Data(contentsOf: URL(fileURLWithPath: folder + "/init.mp4"))
            for s in list.segments {
                let joined = Fixtures.temporaryDirectory("seg").appendingPathComponent("s.mp4")
                try (initData + Data(contentsOf: URL(fileURLWithPath: folder + "/" + s.uri))).write(to: joined)
                let frames = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                      "frame=pts_time,key_frame", "-of", "csv=p=0", joined.path])
                let first = try #require(String(decoding: frames.stdout, as: UTF8.self).split(separator: "\n").first)
                let cells = first.split(separator: ",")
                #expect(cells[0] == "1", "\(s.uri) of \(playlist) does not start with a keyframe")
                #expect(Probe.microseconds(String(cells[1])) == start, "\(s.uri) starts at \(cells[1]), the playlist says \(start) µs")
                start += s.duration
            }
            // tfdt continues from segment to segment (12800 units a second: FFmpeg's video timescale for 25 fps).
            let tfdt = try decodeTimes(folder, list.segments)
            #expect(tfdt.first == 0, "tfdt \(tfdt)")
            #expect(zip(tfdt, tfdt.dropFirst()).enumerated().allSatisfy { i, pair in
                pair.1 - pair.0 == (list.segments[i].duration * 12800 + 500_000) / 1_000_000 }, "tfdt \(tfdt)")
            let keys = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-skip_frame", "nokey",
                                                                "-show_entries", "frame=pts_time", "-of", "csv=p=0", playlist])
            keyframeTimes.append(String(decoding: keys.stdout, as: UTF8.self).split(separator: "\n").compactMap { Probe.microseconds(String($0)) })

            // BANDWIDTH is the peak segment rate measured (video + audio), AVERAGE-BANDWIDTH the mean.
            let videoRates = try rates(folder, list)
            let bandwidth = try #require(info["BANDWIDTH"].flatMap { Int64($0) })
            let average = try #require(info["AVERAGE-BANDWIDTH"].flatMap { Int64($0) })
            #expect(abs(bandwidth - (videoRates.peak + audioRates.peak)) <= 2, "BANDWIDTH \(bandwidth)")
            #expect(abs(average - (videoRates.average + audioRates.average)) <= 2, "AVERAGE-BANDWIDTH \(average)")
            #expect(average <= bandwidth)
        }
        // IDR pictures at every segment start (every multiple of the grid), the same in every rung.
        let grid: [Int64] = Array(stride(from: Int64(0), to: Int64(13_000_000), by: Int(Self.grid) * 1_000_000))
        for times in keyframeTimes { #expect(Set(grid).isSubset(of: Set(times)), "keyframes at \(times)") }
        #expect(keyframeTimes.dropFirst().allSatisfy { $0 == keyframeTimes[0] })

        // Audio: the init segment's edit list hides the priming once; presented from time zero the
        // playlist decodes to exactly a single pass's samples, lag 0 at every join and at the end.
        let audioTFDT = try decodeTimes(audioFolder, audio.segments)
        #expect(audioTFDT.first == 0)
        #expect(zip(audioTFDT, audioTFDT.dropFirst()).enumerated().allSatisfy { i, pair in
            pair.1 - pair.0 == (audio.segments[i].duration * 48000 + 500_000) / 1_000_000 + (i == 0 ? 1024 : 0) }, "audio tfdt \(audioTFDT)")
        let edits = try MP4Boxes.editLists(audioFolder + "/init.mp4")
        #expect(edits.count == 1 && edits[0].entries.count == 1 && edits[0].entries[0].mediaTime == 1024)
        let single = Fixtures.temporaryDirectory("single").appendingPathComponent("single.mp4")
        let session = ExportSession(asset: try await Asset.open(source), outputURL: single)
        session.audioSettings = AudioSettings(codec: .aac)
        session.includesVideo = false
        try await session.export()
        let reference = try await AudioAnalysis.decodeMono(single.path)
        let presented = try await presentedAudio(audioPlaylist)
        #expect(presented.count == reference.count, "audio playlist \(presented.count) samples, single pass \(reference.count)")
        let sourceAudio = try await AudioAnalysis.decodeMono(source)
        let joins = package.summary.plan.audioSegments(track: 0).compactMap { $0.audio?.keepStart }.map { Int($0) }
        #expect(joins.count >= 2)
        for center in joins + [sourceAudio.count - 3000] {
            #expect(await AudioAnalysis.lag(of: presented, against: sourceAudio, around: center) == 0, "lag at sample \(center)")
        }

        // DASH over the same segments: ffmpeg opens it and decodes every representation whole.
        let mpd = package.dir.appendingPathComponent("show.mpd").path
        let dash = try await Probe(mpd, countFrames: true)
        #expect(dash.all("video").count == 2 && dash.all("video").allSatisfy { $0.readFrames == sourceFrames })
        #expect(dash.all("audio").count == 1)
        let manifest = try String(contentsOfFile: mpd, encoding: .utf8)
        #expect(manifest.components(separatedBy: "<AdaptationSet").count - 1 == 2)
        #expect(manifest.contains("<SegmentTimeline>"))
        // Each Representation's bandwidth is the least rate that plays it from any segment start
        // after the MPD's 2 s minBufferTime, reckoned here from ffprobe's packets and the files.
        #expect(manifest.contains("minBufferTime=\"PT2S\""))
        for i in variants {
            let folder = (package.dir.appendingPathComponent(masterLines[i + 1]).path as NSString).deletingLastPathComponent
            let list = try mediaPlaylist(folder + "/index.m3u8")
            try await expectDeliveryRate(manifest, folder: folder, segments: list.segments, stream: "v:0")
        }
        try await expectDeliveryRate(manifest, folder: audioFolder, segments: audio.segments, stream: "a:0")
        // The summary (`transcode --json`) gives each rendition's figure as the MPD does.
        for rendition in try #require(package.summary.package?.renditions) {
            let line = manifest.split(separator: "\n").first { $0.contains("<Representation id=\"\(rendition.folder)\"") }
            #expect(line?.contains(" bandwidth=\"\(rendition.deliveryBitrate ?? -1)\"") == true, "\(rendition.folder): \(line ?? "")")
        }

        // Published whole: the manifests and one folder per rendition, nothing temporary.
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: package.dir.path))
        #expect(names == ["show.m3u8", "show.mpd", "show-180p-400k", "show-90p-120k", "show-audio-1"])
    }

    /// The `bandwidth` the MPD gives the Representation in `folder` is what ISO/IEC 23009-1 asks
    /// with a 2 s buffer — delivered at that rate from any segment start, every packet is there by
    /// its decode time — within 0.2 %: reckoned from ffprobe's decode times and sizes of every
    /// packet (each segment joined to its init segment), a segment's box bytes counted with its
    /// first packet, at every segment start against every later packet (quadratic; a 13 s clip).
    func expectDeliveryRate(_ manifest: String, folder: String, segments: [(duration: Int64, uri: String)],
                            stream: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let id = (folder as NSString).lastPathComponent
        let tag = try #require(manifest.split(separator: "\n").first { $0.contains("<Representation id=\"\(id)\"") })
        let stated = try #require(tag.components(separatedBy: " bandwidth=\"").dropFirst().first
            .flatMap { Double($0.prefix { $0.isNumber }) }, "no bandwidth in \(tag)")
        let initData = try Data(contentsOf: URL(fileURLWithPath: folder + "/init.mp4"))
        var samples: [(time: Double, bits: Double, starts: Bool)] = []
        for segment in segments {
            let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + segment.uri))
            let joined = Fixtures.temporaryDirectory("rate").appendingPathComponent("s.mp4")
            try (initData + data).write(to: joined)
            let arguments = ["-v", "error", "-select_streams", stream, "-show_entries", "packet=dts_time,size",
                             "-of", "csv=p=0", joined.path]
            let probe = try await ExternalTool.check("ffprobe", arguments)
            var rows: [(time: Double, bytes: Double)] = []
            for line in String(decoding: probe.stdout, as: UTF8.self).split(separator: "\n") {
                let cells = line.split(separator: ",")
                if cells.count == 2, let time = Double(cells[0]), let bytes = Double(cells[1]) { rows.append((time, bytes)) }
            }
            let payload = rows.reduce(0.0) { $0 + $1.bytes }
            for (k, row) in rows.enumerated() {
                let boxes = k == 0 ? 8 * (Double(data.count) - payload) : 0
                samples.append((row.time, 8 * row.bytes + boxes, k == 0))
            }
        }
        var least = 0.0
        for s in samples.indices where samples[s].starts {
            var bits = 0.0
            for k in s..<samples.count {
                bits += samples[k].bits
                least = max(least, bits / (2 + samples[k].time - samples[s].time))
            }
        }
        #expect(abs(stated - least) <= least * 0.002, "\(id): bandwidth \(stated), reckoned \(least)", sourceLocation: sourceLocation)
    }

    /// Mean luma PSNR (dB) of a rendition against the source scaled to its size by ffmpeg
    /// (lanczos): the independent reference picture.
    func meanPSNR(_ playlist: String, source: String, width: Int, height: Int) async throws -> Double {
        let stats = Fixtures.temporaryDirectory("psnr").appendingPathComponent("psnr.log").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", playlist, "-i", source, "-lavfi",
                                                "[1:v]scale=\(width):\(height):flags=lanczos[r];[0:v][r]psnr=stats_file=\(stats)",
                                                "-f", "null", "-"])
        let psnr = try String(contentsOfFile: stats, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("psnr_y:") }.map { Double($0.dropFirst(7)) ?? 99 }
        }
        try #require(psnr.count == 13 * 25)
        return psnr.reduce(0, +) / Double(psnr.count)
    }

    @Test("a rung scaled from a larger rung's picture (twice its size) looks as good as the same rung scaled from the source")
    func rungFromRung() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let small = LadderRung(width: 128, height: 72, bitrate: 100_000)
        // 256x144 is not the source's size, so the 128x72 rung scales from a scaled picture.
        let ladder = try await makePackage(dash: false, ladder: [LadderRung(width: 256, height: 144, bitrate: 300_000), small])
        let alone = try await makePackage(dash: false, ladder: [small])
        let fed = try await meanPSNR(ladder.dir.appendingPathComponent("show-72p-100k/index.m3u8").path, source: source,
                                     width: 128, height: 72)
        let direct = try await meanPSNR(alone.dir.appendingPathComponent("show-72p-100k/index.m3u8").path, source: source,
                                        width: 128, height: 72)
        #expect(direct > 30, "the rung alone: \(direct) dB")
        #expect(fed > direct - 0.5, "from the larger rung \(fed) dB, from the source \(direct) dB")
    }

    /// Whether Debian's `chromium` is installed (Deploy/setup.sh installs it).
    static let hasChromium = ["/usr/bin/chromium", "/usr/local/bin/chromium"].contains { FileManager.default.isExecutableFile(atPath: $0) }

    /// What `Deploy/play-package.py`'s page saw.
    struct Playback: Decodable {
        struct Variant: Decodable {
            var codecs: String
            var supported: Bool
        }
        var variants: [Variant]?
        var audioSupported: Bool?
        var videoBuffered: [[Double]]?
        var audioBuffered: [[Double]]?
        var currentTime: Double?
        var advanced: Bool
        var error: String?
    }

    @Test("the package plays in headless Chromium (Media Source Extensions): CODECS supported, playback advances, audio starts and ends with the video",
          .enabled(if: hasChromium))
    func playsInChromium() async throws {
        let package = try await makePackage(ladder: Self.twoRungs)
        let script = Fixtures.packageRoot.appendingPathComponent("Deploy/play-package.py").path
        let run = try await ExternalTool.run("python3", [script, "--package", package.master])
        #expect(run.status == 0, "\(run.text) \(run.stderr)")
        let playback = try JSONDecoder().decode(Playback.self, from: run.stdout)
        #expect(playback.error == nil, "\(playback.error ?? "")")
        #expect(playback.variants?.count == 2 && playback.variants?.allSatisfy(\.supported) == true, "\(playback.variants ?? [])")
        #expect(playback.audioSupported == true)
        #expect(playback.advanced, "currentTime \(playback.currentTime ?? -1)")
        // One buffered range each, from zero to the clip's end: the audio's priming (hidden by its
        // init segment's edit list) would otherwise push its end 1024 samples (21 ms) past the video's.
        let video = try #require(playback.videoBuffered?.first), audio = try #require(playback.audioBuffered?.first)
        #expect(playback.videoBuffered?.count == 1 && playback.audioBuffered?.count == 1)
        #expect(abs(video[0]) < 0.001 && abs(video[1] - 13) < 0.001, "video buffered \(video)")
        #expect(abs(audio[0]) < 0.001 && abs(audio[1] - 13) < 0.005, "audio buffered \(audio)")
    }

    @Test("an existing package is kept without -y and replaced whole with it; nothing half-written on refusal")
    func publishing() async throws {
        let dir = Fixtures.temporaryDirectory("republish")
        let rung = [LadderRung(width: 160, height: 90, bitrate: 100_000)]
        _ = try await makePackage(dash: false, ladder: rung, preset: "ultrafast", in: dir)
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
        #expect(before == ["show.m3u8", "show-90p-100k", "show-audio-1"])
        // A rendition folder in the way, without -y: refused before any work, nothing touched.
        try FileManager.default.removeItem(atPath: dir.appendingPathComponent("show.m3u8").path)
        await #expect(throws: MediaError.self) { _ = try await makePackage(dash: false, ladder: rung, preset: "ultrafast", in: dir) }
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)) == ["show-90p-100k", "show-audio-1"])
        // With -y the package is written again, whole.
        _ = try await makePackage(dash: false, ladder: rung, preset: "ultrafast", overwrite: true, in: dir)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)) == before)
        #expect(try await Probe(dir.appendingPathComponent("show.m3u8").path, countFrames: true).first("video")?.readFrames == 13 * 25)
    }

    @Test("a segment damaged after it was encoded fails the packaging and leaves nothing beside the output")
    func damagedSegment() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let work = Fixtures.temporaryDirectory("package-segments")
        let first = Fixtures.temporaryDirectory("package-first").appendingPathComponent("show.m3u8")
        let request = TranscodeRequest(
            video: VideoSettings(codec: .h264, preset: "ultrafast"), audio: AudioSettings(codec: .aac), fileType: .mp4,
            package: PackageRequest(ladder: [LadderRung(width: 160, height: 90, bitrate: 100_000)], dash: true))
        let summary = try await Transcoder(options: .init(source: source, output: first, request: request, jobs: 2,
                                                          keepSegmentsIn: work)).run()
        let video = try #require(summary.segments.first { !($0.path.isEmpty) && summary.plan.videoSegments.map(\.index).contains($0.index) })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: video.path))
        bytes[bytes.count / 2] ^= 0xff
        try bytes.write(to: URL(fileURLWithPath: video.path))
        let dir = Fixtures.temporaryDirectory("package-damaged")
        await #expect(throws: MediaError.self) {
            _ = try await Packager(plan: summary.plan).package(
                segments: Dictionary(uniqueKeysWithValues: summary.segments.map { ($0.index, $0.path) }),
                checksums: Dictionary(uniqueKeysWithValues: summary.segments.map { ($0.index, $0.checksum) }),
                to: dir.appendingPathComponent("show.m3u8"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test("segments kept from a package are packaged again by `splice stitch DIR OUT.m3u8`; a file name is refused, nothing written")
    func stitchPackagesKeptSegments() async throws {
        let kept = Fixtures.temporaryDirectory("package-kept")
        let first = try await makePackage(ladder: Self.twoRungs, preset: "ultrafast", keepSegmentsIn: kept).dir
        let again = Fixtures.temporaryDirectory("package-again")
        let splice = try SpliceBinary.executable()
        // A file name: refused before any work, saying what to name instead (usage: exit 64).
        let refused = try await ExternalTool.run(executable: splice, ["stitch", kept.path, "show.mp4"], in: again)
        #expect(refused.exitedNormally && refused.status == 64, "status \(refused.status): \(refused.stderr)")
        #expect(refused.stderr.contains("streaming package") && refused.stderr.contains(".m3u8"), "\(refused.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: again.path).isEmpty)
        // The master playlist's name: the same package, file for file, as the transcode wrote.
        let made = try await ExternalTool.run(executable: splice, ["stitch", kept.path, "show.m3u8"], in: again)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.text.hasPrefix("wrote show.m3u8: ") && made.text.contains("3 renditions: show-180p-400k"), "\(made.text)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: first.path).sorted()
        #expect(try FileManager.default.subpathsOfDirectory(atPath: again.path).sorted() == files)
        #expect(files.contains("show.mpd") && files.contains("show-180p-400k/index.m3u8"), "\(files)")
        for file in files where !file.hasSuffix("/") {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: first.appendingPathComponent(file).path, isDirectory: &isFolder),
                  !isFolder.boolValue else { continue }
            #expect(try Data(contentsOf: again.appendingPathComponent(file)) == Data(contentsOf: first.appendingPathComponent(file)),
                    "\(file) differs")
        }
        // And ffprobe reads every frame of the source through the new master playlist.
        #expect(try await Probe(again.appendingPathComponent("show.m3u8").path, countFrames: true).first("video")?.readFrames == 13 * 25)
        // A kept folder missing a segment file: refused before any work, naming the file and what to do.
        try FileManager.default.removeItem(at: kept.appendingPathComponent("segment-00001.splseg"))
        let elsewhere = Fixtures.temporaryDirectory("package-incomplete")
        let incomplete = try await ExternalTool.run(executable: splice, ["stitch", kept.path, "show.m3u8"], in: elsewhere)
        #expect(incomplete.status == 64 && incomplete.stderr.contains("segment-00001.splseg")
                && incomplete.stderr.contains("--keep-segments"), "status \(incomplete.status): \(incomplete.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
    }

    @Test("a range that starts between frames: every frame of it, the playlist from zero, DASH valid")
    func rangeBetweenFrames() async throws {
        let source = try await Fixtures.clip(Self.clip)
        let dir = Fixtures.temporaryDirectory("package-range")
        let master = dir.appendingPathComponent("show.m3u8")
        // 1.3 s falls between the frames at 1.28 and 1.32 s: the first frame is 20 ms after zero.
        let request = TranscodeRequest(
            video: VideoSettings(codec: .h264, preset: "ultrafast"), audio: AudioSettings(codec: .aac), fileType: .mp4,
            range: MediaTimeRange(start: MediaTime(value: 13, timescale: 10), duration: MediaTime(seconds: 7)),
            package: PackageRequest(ladder: [LadderRung(width: 160, height: 90, bitrate: 100_000)],
                                    segmentDuration: MediaTime(seconds: 2), dash: true))
        _ = try await Transcoder(options: .init(source: source, output: master, request: request, jobs: 2)).run()
        let folder = dir.appendingPathComponent("show-90p-100k").path
        let list = try mediaPlaylist(folder + "/index.m3u8")
        #expect(try await Probe(folder + "/index.m3u8", countFrames: true).first("video")?.readFrames == 7 * 25)
        // The playlist covers [0, end of the last frame): 20 ms of empty edit, then 175 frames.
        #expect(list.segments.reduce(0) { $0 + $1.duration } == 7_020_000)
        let manifest = try String(contentsOfFile: dir.appendingPathComponent("show.mpd").path, encoding: .utf8)
        #expect(!manifest.contains("presentationTimeOffset=\"-"))
        let dash = try await Probe(dir.appendingPathComponent("show.mpd").path, countFrames: true)
        #expect(dash.first("video")?.readFrames == 7 * 25)
    }

    @Test("a source the package cannot use fails with a clear error and leaves nothing")
    func refusal() async throws {
        let dir = Fixtures.temporaryDirectory("refused")
        let audioOnly = try await Fixtures.generated("package-audio-only.m4a", ffmpeg: ["-f", "lavfi", "-i", "sine=d=3", "-c:a", "aac"])
        let request = TranscodeRequest(
            video: VideoSettings(codec: .h264), audio: AudioSettings(codec: .aac), fileType: .mp4,
            package: PackageRequest(ladder: nil))
        await #expect(throws: (any Error).self) {
            _ = try await Transcoder(options: .init(source: audioOnly, output: dir.appendingPathComponent("x.m3u8"),
                                                    request: request, jobs: 1)).run()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }
}
