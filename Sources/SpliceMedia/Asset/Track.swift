/// What a track carries.
public enum TrackKind: String, Sendable, Codable, Hashable {
    case video, audio, subtitle, data, attachment, unknown
}

/// One elementary stream of an ``Asset``, as probed. Times are asset times (see ``Asset``).
public struct Track: Sendable, Codable, Hashable, Identifiable {
    /// The stream index in the container.
    public var id: Int
    public var kind: TrackKind
    /// FFmpeg's short codec name ("h264", "aac", "pcm_s16le"), or "none" for an unknown codec.
    public var codecName: String
    /// FFmpeg's descriptive codec name.
    public var codecLongName: String
    /// The codec profile ("High", "LC"), when the codec reports one.
    public var profile: String?
    /// Units of the track's timestamps.
    public var timeBase: Rational
    /// When the track's first sample is presented, in asset time.
    public var startTime: MediaTime?
    /// How long the track lasts, when the container says.
    public var duration: MediaTime?
    /// Bits per second, when known.
    public var bitRate: Int64?
    /// ISO 639 language tag from the container, when present.
    public var language: String?
    /// Whether the container marks the track as default.
    public var isDefault: Bool
    /// The number of samples (frames) the container declares, when it declares it.
    public var declaredFrameCount: Int64?
    /// Container tags of this stream.
    public var metadata: [String: String]

    // MARK: Video
    /// Coded width and height in pixels (before rotation).
    public var width: Int?
    public var height: Int?
    /// Pixel aspect ratio, when not square.
    public var sampleAspectRatio: Rational?
    /// Clockwise rotation, in degrees (0, 90, 180, 270), that makes the picture upright, read from
    /// the display matrix. (ffprobe prints the opposite sense: its `rotation=90` is our 270.)
    public var rotation: Int
    /// The average frame rate, when known.
    public var frameRate: Rational?
    /// FFmpeg's pixel format name ("yuv420p", "yuv420p10le").
    public var pixelFormat: String?
    /// Whether frames are stored out of presentation order (B-frames).
    public var hasReordering: Bool

    // MARK: Audio
    public var sampleRate: Int?
    public var channels: Int?
    /// The channel layout as FFmpeg describes it ("stereo", "5.1(side)").
    public var channelLayout: String?
    /// FFmpeg's sample format name ("fltp", "s16").
    public var sampleFormat: String?

    // MARK: Added later (defaults keep older memberwise calls working)
    /// The sample description's four-character code ("avc1", "mp4a", "mebx", "tmcd"), when the
    /// container has one.
    public var codecTag: String? = nil
    /// The track's title (its "title" tag), when it has one.
    public var title: String? = nil
    /// The container's own track number (the MP4/MOV `tkhd` track ID, Matroska's track number).
    public var containerTrackID: Int? = nil
    /// Whether the container marks the track as forced (subtitles shown whatever the language).
    public var isForced: Bool = false
    /// Every flag the container sets on the track, by FFmpeg's name ("default", "forced",
    /// "hearing_impaired", "comment"…).
    public var dispositions: [String] = []
    /// Colour description of a video track, by FFmpeg name ("bt709", "bt2020", "smpte2084",
    /// "arib-std-b67", "tv"/"pc"), when the source says.
    public var colorPrimaries: String? = nil
    public var colorTransfer: String? = nil
    public var colorSpace: String? = nil
    public var colorRange: String? = nil
    /// Bits per sample of a video track's pixel format (8, 10, 12).
    public var bitDepth: Int? = nil
    /// HDR10 static metadata of a video track (from the container, or its first frame).
    public var hdr: HDRMetadata? = nil

    /// The upright display size: coded size with the pixel aspect ratio applied to the width,
    /// then width and height swapped for 90° and 270° rotations.
    public var displaySize: (width: Int, height: Int)? {
        guard let width, let height else { return nil }
        var w = width
        if let sar = sampleAspectRatio, sar.isPositive, sar.numerator != sar.denominator {
            w = Int(MediaTime.rescale(Int64(width), multiplier: Int64(sar.numerator),
                                      divisor: Int64(sar.denominator)))
        }
        return rotation % 180 == 0 ? (w, height) : (height, w)
    }

    /// Whether the video is coded for a high dynamic range display (PQ or HLG transfer).
    public var isHDR: Bool { colorTransfer == "smpte2084" || colorTransfer == "arib-std-b67" }
}

/// HDR10 static metadata: the mastering display's colour volume and the content light levels.
/// Values are kept as FFmpeg's rationals so they travel exactly.
public struct HDRMetadata: Sendable, Codable, Hashable {
    /// The mastering display (SMPTE ST 2086): chromaticities of red, green, blue and white, and
    /// its luminance range in cd/m².
    public struct MasteringDisplay: Sendable, Codable, Hashable {
        public var red: [Rational]
        public var green: [Rational]
        public var blue: [Rational]
        public var whitePoint: [Rational]
        public var minLuminance: Rational
        public var maxLuminance: Rational
    }

    /// Content light levels (CTA-861.3): maximum content and maximum frame-average light, cd/m².
    public struct ContentLightLevel: Sendable, Codable, Hashable {
        public var maxContent: Int
        public var maxFrameAverage: Int
    }

    public var masteringDisplay: MasteringDisplay?
    public var contentLightLevel: ContentLightLevel?
}
