import Foundation
import SpliceMedia

/// One export flag, declared once: how it reads on the command line, which part of the output it
/// concerns, and what it sets. The table in ``ExportOptions/flags`` is the only place a flag is
/// written; help, parsing, "was any video flag given" and the settings all come from it.
struct ExportFlag: Sendable {
    /// What a flag is about, for the combinations `--copy-*` and `--no-*` refuse.
    enum Scope: Sendable { case video, audio, other }

    let declaration: any ArgumentDeclaration
    let scope: Scope
    /// Whether it was given (on the command line or through its environment variable).
    let isGiven: @Sendable (ParsedArguments) -> Bool
    /// Sets what it sets.
    let apply: @Sendable (ParsedArguments, inout ExportChoices) -> Void

    /// A video encoder setting.
    static func video<Value: Sendable>(_ option: Option<Value>, _ set: @escaping @Sendable (inout VideoSettings, Value) -> Void)
        -> ExportFlag
    {
        ExportFlag(declaration: option, scope: .video, isGiven: { $0[option] != nil }) { parsed, choices in
            if let value = parsed[option] { set(&choices.video, value) }
        }
    }

    /// An audio encoder setting.
    static func audio<Value: Sendable>(_ option: Option<Value>, _ set: @escaping @Sendable (inout AudioSettings, Value) -> Void)
        -> ExportFlag
    {
        ExportFlag(declaration: option, scope: .audio, isGiven: { $0[option] != nil }) { parsed, choices in
            if let value = parsed[option] { set(&choices.audio, value) }
        }
    }

    /// Anything else with a value.
    static func other<Value: Sendable>(_ option: Option<Value>, _ set: @escaping @Sendable (inout ExportChoices, Value) -> Void)
        -> ExportFlag
    {
        ExportFlag(declaration: option, scope: .other, isGiven: { $0[option] != nil }) { parsed, choices in
            if let value = parsed[option] { set(&choices, value) }
        }
    }

    /// A repeatable option: every value, in order.
    static func repeated<Value: Sendable>(
        _ option: Option<Value>, _ set: @escaping @Sendable (inout ExportChoices, [Value]) -> Void
    ) -> ExportFlag {
        ExportFlag(declaration: option, scope: .other, isGiven: { !$0.values(option).isEmpty }) { parsed, choices in
            set(&choices, parsed.values(option))
        }
    }

    /// A video encoder switch.
    static func video(_ flag: Flag, _ set: @escaping @Sendable (inout VideoSettings) -> Void) -> ExportFlag {
        ExportFlag(declaration: flag, scope: .video, isGiven: { $0[flag] }) { parsed, choices in
            if parsed[flag] { set(&choices.video) }
        }
    }

    /// A flag without a value.
    static func flag(_ flag: Flag, _ set: @escaping @Sendable (inout ExportChoices) -> Void) -> ExportFlag {
        ExportFlag(declaration: flag, scope: .other, isGiven: { $0[flag] }) { parsed, choices in
            if parsed[flag] { set(&choices) }
        }
    }
}

/// What the export flags chose, before it becomes a ``TranscodeRequest`` or an export session.
struct ExportChoices: Sendable {
    var video: VideoSettings
    var audio: AudioSettings
    var format: OutputFileType?
    var start: MediaTime?
    var duration: MediaTime?
    var faststart = false
    var copyVideo = false
    var copyAudio = false
    var noVideo = false
    var noAudio = false
    var metadata: [String: String] = [:]
    var audioTracks: AudioTrackSelection?
    var subtitles = TrackPolicy.copy
    var dataTracks = TrackPolicy.copy
    var annotationsFile: String?

    /// The audio tracks the output carries (`--no-audio` is `--audio-tracks none`).
    var audioSelection: AudioTrackSelection { noAudio ? .none : (audioTracks ?? .all) }

    /// The part of the asset to export, nil for all of it.
    var timeRange: MediaTimeRange? {
        guard start != nil || duration != nil else { return nil }
        return MediaTimeRange(start: start ?? .zero, duration: duration ?? MediaTime(seconds: 1 << 40))
    }
}

/// The flags that say what output to make, shared by `export`, `transcode` and `submit`.
struct ExportOptions: OptionGroup {
    static let flags: [ExportFlag] = [
        // Video
        .video(Option<VideoSettings.Codec>("video-codec", valueName: "codec",
            help: "Video codec (default: h264, or vp9 for .webm).")) { $0.codec = $1 },
        .video(Option<String>("video-encoder", valueName: "name",
            help: "The FFmpeg encoder for the codec: av1 libsvtav1 (default) or libaom-av1 (slower, threads poorly "
                + "alone, gains most from segments; --preset is its cpu-used 0-8). In a cluster, only workers that "
                + "have it get the job's segments.") { $0 }) { $0.encoder = $1 },
        .video(Option<Int>("width", valueName: "pixels", help: "Output width; alone, the height keeps the aspect."))
            { $0.width = $1 },
        .video(Option<Int>("height", valueName: "pixels",
            help: "Output height; with --width the picture is fitted and padded.")) { $0.height = $1 },
        .video(Flag("square-pixels", help: "Scale an anamorphic source (pixels not square: 720x480 DVD, 1440x1080 HDV) "
            + "to square pixels at its display width. Without it and without a size, the output keeps the stored size "
            + "and writes the pixel aspect ratio; a size, and every streaming rung, is always square.")) { $0.squarePixels = true },
        .video(Option<Int>("crf", valueName: "quality",
            help: "Constant quality (h264/hevc 0-51, vp9/av1 0-63; lower is better). The default when no rate is "
                + "given: h264 23, hevc 28, vp9 31, av1 35 (SVT) or 32 (libaom). Even across segment joins.")) { $0.quality = $1 },
        .video(Option<BitRate>("video-bitrate", valueName: "rate",
            help: "Average video bit rate (e.g. 4M) instead of constant quality. In segments, each one after the "
                + "first warms its rate control up on the two seconds before it, so joins do not dip.")) { $0.bitrate = $1.bitsPerSecond },
        .video(Option<BitRate>("max-bitrate", valueName: "rate",
            help: "Peak video bit rate (VBV/HRD), with --crf or --video-bitrate; needs --buffer-size. A stitched "
                + "file keeps to one buffer over its whole length (each segment starts it half full; the stitch is "
                + "checked and a note says where it would run dry).")) { $0.maxBitrate = $1.bitsPerSecond },
        .video(Option<BitRate>("buffer-size", valueName: "bits", help: "Rate-control buffer size for --max-bitrate (e.g. 8M)."))
            { $0.bufferSize = $1.bitsPerSecond },
        .video(Option<String>("profile", valueName: "name", help: "Codec profile (high, main10, hq, …).") { $0 })
            { $0.profile = $1 },
        .video(Option<String>("level", valueName: "level", help: "Codec level for h264/hevc (e.g. 4.1).") { $0 })
            { $0.level = $1 },
        .video(Option<String>("preset", valueName: "name",
            help: "Encoder speed: x264/x265 preset (ultrafast … veryslow) or vp9/av1 speed number.") { $0 })
            { $0.preset = $1 },
        .video(Option<Int>("keyframe-interval", valueName: "frames", help: "Maximum frames between keyframes (default: 10 s worth, plus scene cuts)."))
            { $0.keyframeInterval = $1 },
        .video(Option<Rational>("frame-rate", valueName: "rate",
            help: "Constant output frame rate (default: keep source timing).")) { $0.frameRate = $1 },
        .video(Option<String>("pixel-format", valueName: "format",
            help: "Pixel format (yuv420p, yuv420p10le, …; default: 4:2:0 at the source's bit depth).")
            { $0 }) { $0.pixelFormat = $1 },
        .video(Flag("tone-map", help: "Map an HDR (PQ/HLG) source to 8-bit SDR BT.709; without it HDR stays HDR, "
            + "10-bit, and 8-bit output is refused.")) { $0.toneMap = true },
        // Audio
        .audio(Option<AudioSettings.Codec>("audio-codec", valueName: "codec",
            help: "Audio codec (default: aac, or opus for .webm).")) { $0.codec = $1 },
        .audio(Option<BitRate>("audio-bitrate", valueName: "rate", help: "Audio bit rate (default 64k per channel)."))
            { $0.bitrate = $1.bitsPerSecond },
        .audio(Option<Int>("sample-rate", valueName: "hz", help: "Audio sample rate.")) { $0.sampleRate = $1 },
        .audio(Option<Int>("channels", valueName: "count", help: "Audio channels (5.1 is mixed down to 2, …)."))
            { $0.channels = $1 },
        .audio(Option<String>("channel-layout", valueName: "layout", help: "Audio layout by name (stereo, 5.1).")
            { $0 }) { $0.channelLayout = $1 },
        // Range and container
        .other(Option<MediaTime>("start", valueName: "time",
            help: "Start of the part to export (seconds or HH:MM:SS.fff).")) { $0.start = $1 },
        .other(Option<MediaTime>("duration", valueName: "time", help: "Length of the part to export."))
            { $0.duration = $1 },
        .other(Option<OutputFileType>("format", valueName: "container",
            help: "Container (default: from the output extension).")) { $0.format = $1 },
        .flag(Flag("faststart", help: "Put the MP4/MOV index first so playback can start while downloading."))
            { $0.faststart = true },
        .flag(Flag("copy-video", help: "Copy the video packets unchanged (no re-encode). In segment-parallel encodes the "
            + "stitcher takes them from the source and the output starts and ends at keyframes.")) { $0.copyVideo = true },
        .flag(Flag("copy-audio", help: "Copy the audio packets unchanged (no re-encode), priming and edit list included."))
            { $0.copyAudio = true },
        .flag(Flag("no-audio", help: "Leave the audio out (same as --audio-tracks none).")) { $0.noAudio = true },
        .flag(Flag("no-video", help: "Leave the video out.")) { $0.noVideo = true },
        .other(Option<AudioTrackSelection>("audio-tracks", valueName: "all|none|N,M|LANG",
            help: "Audio tracks to keep: all (default), none, track numbers as `splice probe` shows them (1,3), or "
                + "languages (eng,fra). Each is encoded with the audio flags and keeps its language, title and flags."))
            { $0.audioTracks = $1 },
        .other(Option<TrackPolicy>("subtitles", valueName: "copy|none",
            help: "Subtitle tracks: copy (default; converted to mov_text for .mp4/.mov, WebVTT for .webm) or none."))
            { $0.subtitles = $1 },
        .other(Option<TrackPolicy>("data-tracks", valueName: "copy|none",
            help: "Timed metadata and timecode tracks: copy (default) or none. Only .mp4/.mov hold timed metadata."))
            { $0.dataTracks = $1 },
        .other(Option<String>("annotations", valueName: "file.json",
            help: "Write a timed metadata track from a JSON list of {\"time\", \"duration\", \"value\"} (.mp4/.mov).")
            { $0 }) { $0.annotationsFile = $1 },
        .repeated(Option<Tag>("metadata", valueName: "key=value", help: "A global tag for the output (repeatable).",
                              isRepeatable: true)) { choices, tags in
            choices.metadata = Dictionary(tags.map { ($0.key, $0.value) }) { _, last in last }
        },
    ]

    static let arguments: [any ArgumentDeclaration] = flags.map(\.declaration)

    private let parsed: ParsedArguments

    init(_ arguments: ParsedArguments) throws {
        parsed = arguments
    }

    /// The container for `output`: --format, else the extension.
    func fileType(for output: String) throws -> OutputFileType {
        if let format = choices(defaultsFor: .mp4).format { return format }
        let name = output.split(separator: "/").last.map(String.init) ?? output
        let ext = name.split(separator: ".").count > 1 ? String(name.split(separator: ".").last!) : ""
        // A streaming package's renditions are CMAF: MP4's codecs.
        if ["m3u8", "mpd"].contains(ext.lowercased()) { return .mp4 }
        guard let type = OutputFileType(pathExtension: ext) else {
            throw UsageError("cannot tell the container of '\(output)': name it .mp4, .mov, .mkv or .webm (or .m3u8/.mpd for a streaming package), or give --format")
        }
        return type
    }

    /// Every flag applied over the defaults of a `type` output (h264/aac, or vp9/opus for WebM).
    func choices(defaultsFor type: OutputFileType) -> ExportChoices {
        var choices = ExportChoices(video: .defaults(for: type), audio: .defaults(for: type))
        for flag in Self.flags { flag.apply(parsed, &choices) }
        return choices
    }

    /// The choices for `output`, checked: flag combinations and every setting on its own terms
    /// and against the container. Throws ``UsageError`` naming the flag.
    func validChoices(output: String) throws -> (type: OutputFileType, choices: ExportChoices) {
        let type = try fileType(for: output)
        let choices = choices(defaultsFor: type)
        let given = { (scope: ExportFlag.Scope) in Self.flags.contains { $0.scope == scope && $0.isGiven(parsed) } }
        if choices.copyVideo && given(.video) {
            throw UsageError("--copy-video copies the video unchanged; drop the video encoding flags")
        }
        if choices.noVideo && (given(.video) || choices.copyVideo) {
            throw UsageError("--no-video leaves the video out; drop the other video flags")
        }
        if choices.copyAudio && given(.audio) {
            throw UsageError("--copy-audio copies the audio unchanged; drop the audio encoding flags")
        }
        if choices.noAudio && (given(.audio) || choices.copyAudio) {
            throw UsageError("--no-audio leaves the audio out; drop the other audio flags")
        }
        if choices.noAudio, let tracks = choices.audioTracks, tracks != .none {
            throw UsageError("--no-audio leaves the audio out; drop --audio-tracks \(tracks)")
        }
        if choices.audioTracks == AudioTrackSelection.none && (given(.audio) || choices.copyAudio) {
            throw UsageError("--audio-tracks none leaves the audio out; drop the other audio flags")
        }
        if choices.audioSelection == .none && choices.noVideo {
            throw UsageError("--no-audio with --no-video leaves nothing to export")
        }
        if let duration = choices.duration, duration <= .zero { throw UsageError("--duration must be longer than zero") }
        do {
            if !choices.copyVideo && !choices.noVideo {
                try choices.video.validate()
                try choices.video.validate(for: type)
            }
            if !choices.copyAudio && choices.audioSelection != .none {
                try choices.audio.validate()
                try choices.audio.validate(for: type)
            }
        } catch {
            throw UsageError(error)
        }
        return (type, choices)
    }

    /// The segment-parallel request for `output` (`transcode`, `submit`), checked once here.
    /// Copied tracks are not segmented: the stitcher takes them from the source.
    func request(output: String, segmentDuration: MediaTime?, audioSegmentDuration: MediaTime? = nil,
                 overwrite: Bool) throws -> TranscodeRequest {
        let (type, choices) = try validChoices(output: output)
        let encodesAudio = !choices.copyAudio && choices.audioSelection != .none
        if choices.copyVideo && !encodesAudio {
            throw UsageError("--copy-video needs audio to encode: a segment-parallel job with nothing to encode is a "
                             + "remux; use `splice export --copy-video` for that")
        }
        if choices.noVideo && !encodesAudio {
            throw UsageError("--no-video with copied or no audio leaves nothing to encode; use `splice export`")
        }
        let request = TranscodeRequest(
            video: choices.noVideo || choices.copyVideo ? nil : choices.video,
            audio: encodesAudio ? choices.audio : nil, fileType: type,
            range: choices.timeRange, optimizesForNetworkUse: choices.faststart, metadata: choices.metadata,
            segmentDuration: segmentDuration, overwrite: overwrite, audioTracks: choices.audioSelection,
            copiesVideo: choices.copyVideo, copiesAudio: choices.copyAudio && choices.audioSelection != .none,
            subtitles: choices.subtitles, dataTracks: choices.dataTracks, annotations: try annotations(choices),
            audioSegmentDuration: audioSegmentDuration)
        do {
            try request.validate()
        } catch {
            throw UsageError(error)
        }
        return request
    }

    /// Applies everything to a session (nil settings copy the track: the seeds' pass-through).
    func configure(_ session: ExportSession, output: String) throws {
        let (type, choices) = try validChoices(output: output)
        session.outputFileType = type
        session.videoSettings = choices.copyVideo || choices.noVideo ? nil : choices.video
        session.audioSettings = choices.copyAudio || choices.audioSelection == .none ? nil : choices.audio
        session.includesVideo = !choices.noVideo
        session.includesAudio = choices.audioSelection != .none
        session.audioTrackSelection = choices.audioSelection
        session.subtitles = choices.subtitles
        session.dataTracks = choices.dataTracks
        session.annotations = try annotations(choices)
        session.timeRange = choices.timeRange
        session.optimizesForNetworkUse = choices.faststart
        session.metadata = choices.metadata
    }

    /// The annotations file, read and checked (`--annotations`).
    private func annotations(_ choices: ExportChoices) throws -> [TimedAnnotation] {
        guard let path = choices.annotationsFile else { return [] }
        do {
            return try TimedAnnotation.load(contentsOf: URL(fileURLWithPath: path))
        } catch let error as SettingsError {
            throw UsageError(error)
        }
    }
}

extension UsageError {
    /// A setting the flags gave that cannot be used, named by its flag.
    init(_ error: SettingsError) {
        self.init("--\(error.field): '\(error.value)' is not valid; it must be \(error.allowed)")
    }
}
