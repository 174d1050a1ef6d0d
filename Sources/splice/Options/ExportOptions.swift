import SpliceMedia

/// The flags that say what output to make, shared by `export`, `transcode` and `submit`.
struct ExportOptions: OptionGroup {
    // Video
    static let videoCodec = Option<VideoSettings.Codec>("video-codec", valueName: "codec",
        help: "Video codec (default: h264, or vp9 for .webm).")
    static let width = Option<Int>("width", valueName: "pixels", help: "Output width; alone, the height keeps the aspect.")
    static let height = Option<Int>("height", valueName: "pixels", help: "Output height; with --width the picture is fitted and padded.")
    static let crf = Option<Int>("crf", valueName: "quality", help: "Constant quality (h264/hevc 0-51, vp9/av1 0-63; lower is better).")
    static let videoBitrate = Option<BitRate>("video-bitrate", valueName: "rate", help: "Average video bit rate (e.g. 4M).")
    static let maxBitrate = Option<BitRate>("max-bitrate", valueName: "rate", help: "Peak video bit rate; needs --buffer-size.")
    static let bufferSize = Option<BitRate>("buffer-size", valueName: "bits", help: "Rate-control buffer size (e.g. 8M).")
    static let profile = Option<String>("profile", valueName: "name", help: "Codec profile (high, main10, hq, …).")
    static let level = Option<String>("level", valueName: "level", help: "Codec level for h264/hevc (e.g. 4.1).")
    static let preset = Option<String>("preset", valueName: "name",
        help: "Encoder speed: x264/x265 preset (ultrafast … veryslow) or vp9/av1 speed number.")
    static let keyframeInterval = Option<Int>("keyframe-interval", valueName: "frames", help: "Maximum frames between keyframes.")
    static let frameRate = Option<Rational>("frame-rate", valueName: "rate", help: "Constant output frame rate (default: keep source timing).")
    static let pixelFormat = Option<String>("pixel-format", valueName: "format", help: "Pixel format (yuv420p, yuv420p10le, …).")
    // Audio
    static let audioCodec = Option<AudioSettings.Codec>("audio-codec", valueName: "codec",
        help: "Audio codec (default: aac, or opus for .webm).")
    static let audioBitrate = Option<BitRate>("audio-bitrate", valueName: "rate", help: "Audio bit rate (default 64k per channel).")
    static let sampleRate = Option<Int>("sample-rate", valueName: "hz", help: "Audio sample rate.")
    static let channels = Option<Int>("channels", valueName: "count", help: "Audio channels (5.1 is mixed down to 2, …).")
    static let channelLayout = Option<String>("channel-layout", valueName: "layout", help: "Audio layout by name (stereo, 5.1).")
    // Range and container
    static let start = Option<MediaTime>("start", valueName: "time", help: "Start of the part to export (seconds or HH:MM:SS.fff).")
    static let duration = Option<MediaTime>("duration", valueName: "time", help: "Length of the part to export.")
    static let format = Option<OutputFileType>("format", valueName: "container", help: "Container (default: from the output extension).")
    static let faststart = Flag("faststart", help: "Put the MP4/MOV index first so playback can start while downloading.")
    static let copyVideo = Flag("copy-video", help: "Copy the video packets unchanged (no re-encode).")
    static let copyAudio = Flag("copy-audio", help: "Copy the audio packets unchanged (no re-encode).")
    static let noAudio = Flag("no-audio", help: "Leave the audio out.")
    static let noVideo = Flag("no-video", help: "Leave the video out.")
    static let metadata = Option<Tag>("metadata", valueName: "key=value", help: "A global tag for the output (repeatable).",
                                      isRepeatable: true)

    static let arguments: [any ArgumentDeclaration] = [
        videoCodec, width, height, crf, videoBitrate, maxBitrate, bufferSize, profile, level, preset, keyframeInterval,
        frameRate, pixelFormat, audioCodec, audioBitrate, sampleRate, channels, channelLayout, start, duration, format,
        faststart, copyVideo, copyAudio, noAudio, noVideo, metadata,
    ]

    var videoCodec: VideoSettings.Codec?
    var width: Int?
    var height: Int?
    var crf: Int?
    var videoBitrate: Int?
    var maxBitrate: Int?
    var bufferSize: Int?
    var profile: String?
    var level: String?
    var preset: String?
    var keyframeInterval: Int?
    var frameRate: Rational?
    var pixelFormat: String?
    var audioCodec: AudioSettings.Codec?
    var audioBitrate: Int?
    var sampleRate: Int?
    var channels: Int?
    var channelLayout: String?
    var start: MediaTime?
    var duration: MediaTime?
    var format: OutputFileType?
    var faststart: Bool
    var copyVideo: Bool
    var copyAudio: Bool
    var noAudio: Bool
    var noVideo: Bool
    var metadata: [String: String]

    init(_ a: ParsedArguments) throws {
        videoCodec = a[Self.videoCodec]
        width = a[Self.width]
        height = a[Self.height]
        crf = a[Self.crf]
        videoBitrate = a[Self.videoBitrate]?.bitsPerSecond
        maxBitrate = a[Self.maxBitrate]?.bitsPerSecond
        bufferSize = a[Self.bufferSize]?.bitsPerSecond
        profile = a[Self.profile]
        level = a[Self.level]
        preset = a[Self.preset]
        keyframeInterval = a[Self.keyframeInterval]
        frameRate = a[Self.frameRate]
        pixelFormat = a[Self.pixelFormat]
        audioCodec = a[Self.audioCodec]
        audioBitrate = a[Self.audioBitrate]?.bitsPerSecond
        sampleRate = a[Self.sampleRate]
        channels = a[Self.channels]
        channelLayout = a[Self.channelLayout]
        start = a[Self.start]
        duration = a[Self.duration]
        format = a[Self.format]
        faststart = a[Self.faststart]
        copyVideo = a[Self.copyVideo]
        copyAudio = a[Self.copyAudio]
        noAudio = a[Self.noAudio]
        noVideo = a[Self.noVideo]
        metadata = Dictionary(a.values(Self.metadata).map { ($0.key, $0.value) }) { _, last in last }
    }

    /// The container for `output`: --format, else the extension.
    func fileType(for output: String) throws -> OutputFileType {
        if let format { return format }
        let name = output.split(separator: "/").last.map(String.init) ?? output
        let ext = name.split(separator: ".").count > 1 ? String(name.split(separator: ".").last!) : ""
        guard let type = OutputFileType(pathExtension: ext) else {
            throw UsageError("cannot tell the container of '\(output)': name it .mp4, .mov, .mkv or .webm, or give --format")
        }
        return type
    }

    private var touchesVideo: Bool {
        videoCodec != nil || width != nil || height != nil || crf != nil || videoBitrate != nil || maxBitrate != nil
            || bufferSize != nil || profile != nil || level != nil || preset != nil || keyframeInterval != nil
            || frameRate != nil || pixelFormat != nil
    }

    private var touchesAudio: Bool {
        audioCodec != nil || audioBitrate != nil || sampleRate != nil || channels != nil || channelLayout != nil
    }

    /// Video settings for the output (nil = copy), checked.
    func videoSettings(for type: OutputFileType) throws -> VideoSettings? {
        if copyVideo || noVideo { return nil }
        var v = VideoSettings(codec: videoCodec ?? (type == .webm ? .vp9 : .h264))
        v.width = width
        v.height = height
        v.quality = crf
        v.bitrate = videoBitrate
        v.maxBitrate = maxBitrate
        v.bufferSize = bufferSize
        v.profile = profile
        v.level = level
        v.preset = preset
        v.keyframeInterval = keyframeInterval
        v.frameRate = frameRate
        v.pixelFormat = pixelFormat
        return v
    }

    /// Audio settings for the output (nil = copy), checked.
    func audioSettings(for type: OutputFileType) throws -> AudioSettings? {
        if copyAudio || noAudio { return nil }
        var a = AudioSettings(codec: audioCodec ?? (type == .webm ? .opus : .aac))
        a.bitrate = audioBitrate
        a.sampleRate = sampleRate
        a.channels = channels
        a.channelLayout = channelLayout
        return a
    }

    /// The part of the asset to export, nil for all of it.
    var timeRange: MediaTimeRange? {
        guard start != nil || duration != nil else { return nil }
        let s = start ?? .zero
        return MediaTimeRange(start: s, duration: duration ?? MediaTime(seconds: 1 << 40))
    }

    /// Checks flag combinations and every setting on its own terms; throws ``UsageError`` naming the flag.
    func validate(output: String) throws {
        let type = try fileType(for: output)
        if copyVideo && touchesVideo { throw UsageError("--copy-video copies the video unchanged; drop the video encoding flags") }
        if noVideo && (touchesVideo || copyVideo) { throw UsageError("--no-video leaves the video out; drop the other video flags") }
        if copyAudio && touchesAudio { throw UsageError("--copy-audio copies the audio unchanged; drop the audio encoding flags") }
        if noAudio && (touchesAudio || copyAudio) { throw UsageError("--no-audio leaves the audio out; drop the other audio flags") }
        if noAudio && noVideo { throw UsageError("--no-audio with --no-video leaves nothing to export") }
        if let duration, duration <= .zero { throw UsageError("--duration must be longer than zero") }
        do {
            try videoSettings(for: type)?.validate()
            try videoSettings(for: type)?.validate(for: type)
            try audioSettings(for: type)?.validate()
            try audioSettings(for: type)?.validate(for: type)
        } catch let error as SettingsError {
            throw UsageError("--\(error.field): '\(error.value)' is not valid; it must be \(error.allowed)")
        }
    }

    /// Applies everything to a session.
    func configure(_ session: ExportSession, output: String) throws {
        let type = try fileType(for: output)
        session.outputFileType = type
        session.videoSettings = try videoSettings(for: type)
        session.audioSettings = try audioSettings(for: type)
        session.includesVideo = !noVideo
        session.includesAudio = !noAudio
        session.timeRange = timeRange
        session.optimizesForNetworkUse = faststart
        session.metadata = metadata
    }
}
