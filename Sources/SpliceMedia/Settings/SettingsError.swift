public import SpliceCore

/// A setting that cannot be used: names the field, what was given and what is allowed. Of the
/// shape every Splice error has: its code is always `invalid-settings`, its message names the
/// field, and no retry helps.
public struct SettingsError: SpliceError, Hashable {
    /// Its one code.
    public enum Code: String, Sendable, Hashable {
        case invalidSettings = "invalid-settings"
    }

    /// The setting's name as the CLI spells it without dashes ("width", "video-codec").
    public var field: String
    /// What was given, as text.
    public var value: String
    /// What is allowed, for people ("a positive integer", "one of ultrafast, fast, medium").
    public var allowed: String

    public init(field: String, value: String, allowed: String) {
        self.field = field
        self.value = value
        self.allowed = allowed
    }

    public var code: Code { .invalidSettings }
    public var message: String { "invalid \(field) '\(value)': must be \(allowed)" }

    /// The setting as ``TranscodeRequest`` spells it, the field path a client of the API sends
    /// (`video.quality` for `crf`); the CLI's name for the few that have no such field.
    public var requestKey: String { Self.requestKeys[field] ?? field }

    /// The message for a client of the API: the same, naming the request's field under `root`
    /// (`` invalid `export.video.quality` '60': … ``) instead of the CLI's flag.
    public func message(under root: String) -> String {
        "invalid `\(root).\(requestKey)` '\(value)': must be \(allowed)"
    }

    /// Each CLI name a setting is refused under, and the request field it sets (the flags'
    /// table, `ExportOptions.flags`, says the same from the CLI's side).
    static let requestKeys: [String: String] = [
        "video-codec": "video.codec", "width": "video.width", "height": "video.height", "crf": "video.quality",
        "video-bitrate": "video.bitrate", "max-bitrate": "video.maxBitrate", "buffer-size": "video.bufferSize",
        "profile": "video.profile", "level": "video.level", "preset": "video.preset",
        "keyframe-interval": "video.keyframeInterval", "frame-rate": "video.frameRate",
        "pixel-format": "video.pixelFormat", "tone-map": "video.toneMap", "square-pixels": "video.squarePixels",
        "video-encoder": "video.encoder",
        "audio-codec": "audio.codec", "audio-bitrate": "audio.bitrate", "sample-rate": "audio.sampleRate",
        "channels": "audio.channels", "channel-layout": "audio.channelLayout",
        "format": "fileType", "start": "range.start", "duration": "range.duration",
        "segment-seconds": "segmentDuration", "audio-segment-seconds": "audioSegmentDuration",
        "copy-video": "copiesVideo", "copy-audio": "copiesAudio", "audio-tracks": "audioTracks",
        "no-video": "includesVideo", "no-audio": "audioTracks", "subtitles": "subtitles", "data-tracks": "dataTracks",
        "annotations": "annotations", "metadata": "metadata", "faststart": "optimizesForNetworkUse",
        "ladder": "package.ladder", "hls-segment-seconds": "package.segmentDuration", "dash": "package.dash",
    ]
    public var isRetryable: Bool { false }
    public var description: String { message }

    /// A "one of a, b, c" phrase.
    static func oneOf<S: Sequence>(_ values: S) -> String where S.Element: CustomStringConvertible {
        "one of " + values.map(\.description).joined(separator: ", ")
    }
}
