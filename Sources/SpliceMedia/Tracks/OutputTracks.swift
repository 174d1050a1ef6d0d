internal import CFFmpeg
import Foundation

/// Which tracks of a source an output carries and how — resolved once against the asset and the
/// container, the same way for `export` (``ExportPlan``) and segment-parallel jobs
/// (``SegmentPlanner``). Nothing is dropped without a word: what the container cannot hold is
/// left out with a notice.
///
/// What each container holds:
/// - **MP4/MOV**: text subtitles as `mov_text` (SubRip, ASS/SSA and WebVTT are converted;
///   styling beyond bold/italic/colour is lost); DVD bitmap subtitles as they are; timed metadata
///   (`mebx`, `mett`, …) copied with its sample description; timecode as a `tmcd` track;
///   chapters.
/// - **Matroska**: SubRip, ASS/SSA, WebVTT and bitmap subtitles (DVD, PGS, DVB) as they are,
///   `mov_text` as SubRip; timecode as a tag; chapters. No timed-metadata tracks.
/// - **WebM**: WebVTT only (text subtitles converted); chapters. No timed metadata, no timecode.
struct OutputTracks: Sendable {
    enum VideoRoute: Sendable {
        case encode(VideoEncoding)
        case copy
    }

    enum AudioRoute: Sendable {
        case encode(AudioEncoding)
        case copy
    }

    struct Subtitle: Sendable, Hashable {
        var track: Track
        /// The encoder to convert to (`mov_text`, `subrip`, `webvtt`); nil copies the packets.
        var convertTo: String?
    }

    var video: (track: Track, route: VideoRoute)?
    var audio: [(track: Track, route: AudioRoute)] = []
    var subtitles: [Subtitle] = []
    /// Data tracks FFmpeg's muxer writes itself.
    var data: [Track] = []
    /// Timed-metadata tracks Splice writes into QuickTime/MP4 outputs (``QuickTimeTrackAppender``).
    var timedMetadata: [Track] = []
    /// The source's start timecode (`HH:MM:SS:FF`), carried on the output video.
    var timecode: String?
    var notices: [String] = []

    /// What an output of `asset` asks for.
    struct Request: Sendable {
        var video: ExportPlan.Request<VideoSettings>
        var audio: ExportPlan.Request<AudioSettings>
        var audioTracks: AudioTrackSelection = .all
        var subtitles: TrackPolicy = .copy
        var dataTracks: TrackPolicy = .copy
        /// Segments: video encoders close every GOP.
        var closedGOP = false
        var codecThreads = 0
    }

    /// Resolves `request` for `asset` written as `fileType`. Reads the sample descriptions of a
    /// QuickTime source (its `moov`) to find timed-metadata tracks: call on a blocking thread.
    static func resolve(_ request: Request, asset: Asset, fileType: OutputFileType) throws -> OutputTracks {
        var out = OutputTracks()
        var notices: [String] = []
        if let track = asset.videoTrack {
            switch request.video {
            case .encode(let settings):
                out.video = (track, .encode(try VideoEncoding.resolve(settings, source: track, fileType: fileType,
                                                                       threads: request.codecThreads,
                                                                       closedGOP: request.closedGOP, notices: &notices)))
            case .copy:
                try checkCopy(track, into: fileType)
                out.video = (track, .copy)
            case .drop: break
            }
        } else if case .encode = request.video, asset.audioTrack == nil {
            throw MediaError(.noUsableTrack, "'\(asset.location)' has no video track")
        }
        switch request.audio {
        case .drop: break
        case .encode(let settings):
            for track in try request.audioTracks.select(from: asset) {
                out.audio.append((track, .encode(try AudioEncoding.resolve(settings, source: track, fileType: fileType))))
            }
        case .copy:
            for track in try request.audioTracks.select(from: asset) {
                try checkCopy(track, into: fileType)
                out.audio.append((track, .copy))
            }
        }
        guard out.video != nil || !out.audio.isEmpty else {
            throw MediaError(.noUsableTrack, "nothing to export from '\(asset.location)': no video or audio track selected")
        }

        let muxer = fileType.muxerName
        // QuickTime keeps chapter titles in a text track the video refers to ("chap"); they travel
        // as chapters, not as a track of their own.
        let boxes = asset.formatName.hasPrefix("mov,") ? QuickTimeTrackInfo.read(location: asset.location) : nil
        let chapterTracks = Set(boxes?.flatMap { $0.references["chap"] ?? [] } ?? [])
        let isChapterTrack = { (t: Track) in t.containerTrackID.map(chapterTracks.contains) ?? false }
        if request.subtitles == .copy {
            for track in asset.tracks where track.kind == .subtitle && !isChapterTrack(track) {
                if ContainerSupport.canHold(codecName: track.codecName, in: muxer) {
                    out.subtitles.append(Subtitle(track: track, convertTo: nil))
                } else if let target = textSubtitleCodec(for: fileType), textSubtitleCodecs.contains(track.codecName) {
                    out.subtitles.append(Subtitle(track: track, convertTo: target))
                } else {
                    notices.append("subtitle track #\(track.id) (\(track.codecName)) left out: a .\(fileType) file cannot hold it")
                }
            }
        }
        if request.dataTracks == .copy {
            for track in asset.tracks where track.kind == .data && !isChapterTrack(track) {
                if track.codecTag == "tmcd" { continue }  // carried as the video's timecode below
                let info = boxes?.first { $0.trackID == track.containerTrackID }
                if let info, info.handler == "meta", fileType.isQuickTime {
                    out.timedMetadata.append(track)
                } else if track.codecName != "none", ContainerSupport.canHold(codecName: track.codecName, in: muxer) {
                    out.data.append(track)
                } else {
                    let what = track.codecTag ?? track.codecName
                    let why = asset.formatName.hasPrefix("mov,") && !fileType.isQuickTime
                        ? "a .\(fileType) file cannot hold timed metadata" : "this FFmpeg cannot write '\(what)' tracks"
                    notices.append("data track #\(track.id) (\(what)) left out: \(why)")
                }
            }
            if out.video != nil, fileType != .webm {
                out.timecode = asset.tracks.lazy.compactMap { $0.metadata["timecode"] }.first
            }
        }
        for track in asset.tracks where track.kind == .attachment {
            notices.append("attachment #\(track.id) (\(track.codecName)) left out")
        }
        let audioWanted: Bool
        if case .drop = request.audio { audioWanted = false } else { audioWanted = true }
        for track in asset.tracks where audioWanted && track.kind == .audio && !out.audio.contains(where: { $0.track.id == track.id }) {
            notices.append("audio track #\(track.id) left out (--audio-tracks \(request.audioTracks))")
        }
        out.notices = notices
        return out
    }

    /// Text subtitle codecs FFmpeg decodes to styled text (ASS events) and can re-encode.
    static let textSubtitleCodecs: Set<String> = ["subrip", "srt", "ass", "ssa", "webvtt", "mov_text", "text"]

    /// The text subtitle format a container takes.
    static func textSubtitleCodec(for fileType: OutputFileType) -> String? {
        switch fileType {
        case .mp4, .mov: "mov_text"
        case .mkv: "subrip"
        case .webm: "webvtt"
        }
    }

    /// Pass-through needs a container that can hold the source codec.
    static func checkCopy(_ track: Track, into fileType: OutputFileType) throws {
        if !ContainerSupport.canHold(codecName: track.codecName, in: fileType.muxerName) {
            let kind = track.kind == .video ? "video" : "audio"
            throw SettingsError(field: "copy-\(kind)", value: track.codecName,
                                allowed: "a codec the .\(fileType) container can hold; re-encode with --\(kind)-codec instead")
        }
    }

    /// `timecode` moved forward by `offset` at `rate` (drop-frame kept); nil when FFmpeg cannot read it.
    static func timecode(_ timecode: String, advancedBy offset: MediaTime, rate: Rational?) -> String? {
        guard let rate, rate.isPositive else { return offset == .zero ? timecode : nil }
        var tc = AVTimecode()
        guard av_timecode_init_from_string(&tc, rate.av, timecode, nil) >= 0 else { return nil }
        let frames = offset.count(of: rate.reciprocalDuration, rounding: .nearest)
        var buffer = [CChar](repeating: 0, count: Int(AV_TIMECODE_STR_SIZE))
        guard av_timecode_make_string(&tc, &buffer, Int32(clamping: frames)) != nil else { return nil }
        return FFmpeg.string(buffer)
    }
}

/// What an output stream says about itself, taken from its source track: tags (language, title,
/// handler name…) and flags (default, forced…). Encoder tags describe the source's encoder and
/// are left behind. Small and Codable: a plan carries it to the stitcher.
public struct StreamDescription: Sendable, Codable, Hashable {
    public var tags: [String: String]
    public var dispositions: [String]

    public init(tags: [String: String] = [:], dispositions: [String] = []) {
        self.tags = tags
        self.dispositions = dispositions
    }

    /// Tags that describe the source's encoding or are rewritten by the muxer.
    static let leftBehind: Set<String> = ["encoder", "ENCODER", "DURATION", "duration", "vendor_id", "timecode",
                                          "NUMBER_OF_FRAMES", "NUMBER_OF_BYTES", "BPS", "_STATISTICS_TAGS",
                                          "_STATISTICS_WRITING_APP", "_STATISTICS_WRITING_DATE_UTC"]

    init(_ track: Track) {
        tags = track.metadata.filter { !StreamDescription.leftBehind.contains($0.key) }
        dispositions = track.dispositions
    }
}

extension Muxer {
    /// Gives output stream `index` the tags and flags of `description`.
    func describe(stream index: Int, as description: StreamDescription) {
        let st = context.pointee.streams[index]!
        for (k, v) in description.tags { av_dict_set(&st.pointee.metadata, k, v, 0) }
        var flags: Int32 = 0
        for name in description.dispositions {
            let flag = av_disposition_from_string(name)
            if flag > 0 { flags |= flag }
        }
        st.pointee.disposition = flags
    }

    /// Gives output stream `index` the tags and flags of a source stream.
    func describe(stream index: Int, like source: UnsafeMutablePointer<AVStream>) {
        describe(stream: index, as: StreamDescription(Track(stream: source, origin: .zero)))
    }
}
