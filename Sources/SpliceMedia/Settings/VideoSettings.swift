/// How to encode video. `nil` video settings on an export mean pass-through (packets copied).
///
/// Fields left `nil` take defaults derived from the source when the export starts: size from the
/// upright source (an anamorphic source keeps its stored size and pixel aspect ratio unless
/// ``squarePixels`` or a size is asked for), constant quality at the encoder's usual level unless a quality or a bit rate
/// is given (``RateControl``: x264 CRF 23, x265 28, VP9 31, SVT-AV1 35, libaom 32), a keyframe
/// at most every ten seconds of source frames,
/// 4:2:0 at the source's bit depth (10-bit stays 10-bit for h264 High 10, hevc Main 10, vp9
/// profile 2 and av1; 4:2:2 10-bit for ProRes), the source's colour description and HDR10
/// metadata kept. An HDR (PQ or HLG) source is never written as 8-bit HDR: 8-bit output needs
/// ``toneMap``.
public struct VideoSettings: Sendable, Codable, Hashable {
    /// The video codecs Splice encodes.
    public enum Codec: String, Sendable, Codable, Hashable, CaseIterable, CustomStringConvertible {
        case h264, hevc, vp9, av1, prores
        public var description: String { rawValue }
    }

    public var codec: Codec
    /// Output width in pixels; with only one of width/height the other keeps the aspect ratio.
    /// With both, the picture is fitted inside the box (aspect kept) and padded with black.
    public var width: Int?
    public var height: Int?
    /// Constant quality (CRF): 0–51 for h264/hevc, 0–63 for vp9/av1; lower is better.
    /// Exclusive with ``bitrate``. Not used by prores (pick a profile instead).
    public var quality: Int?
    /// Average bit rate in bits per second (segments after the first warm their rate control up
    /// on the two seconds before them: ``RateControl``).
    public var bitrate: Int?
    /// Peak bit rate in bits per second (VBV/HRD max rate); requires ``bufferSize``.
    public var maxBitrate: Int?
    /// Rate-control buffer size in bits.
    public var bufferSize: Int?
    /// Codec profile (h264: baseline, main, high, high10, high422, high444; hevc: main, main10,
    /// main422-10, main444-8, main444-10; vp9: 0–3; av1: main, high, professional; prores: proxy,
    /// lt, standard, hq, 4444, 4444xq).
    public var profile: String?
    /// Codec level ("4.1" for h264/hevc).
    public var level: String?
    /// Speed/quality trade-off: x264/x265 preset names, or an integer speed for vp9 (0–8) and
    /// av1 (SVT-AV1 preset 0–13).
    public var preset: String?
    /// Maximum distance between keyframes, in frames; nil: ten seconds' worth, plus wherever the
    /// encoder's scene-cut detection puts one.
    public var keyframeInterval: Int?
    /// Constant output frame rate; `nil` keeps the source timestamps (variable rate preserved).
    public var frameRate: Rational?
    /// FFmpeg pixel format name ("yuv420p", "yuv420p10le", "yuv422p10le").
    public var pixelFormat: String?
    /// Map an HDR (PQ or HLG) source to SDR BT.709 (Hable curve, peak from the mastering
    /// display). Without it an HDR source keeps its transfer and at least 10 bits.
    public var toneMap: Bool?
    /// Square output pixels for an anamorphic source (one whose pixels are not square: DVD's
    /// 720×480 at 32:27, HDV's 1440×1080 at 4:3): scaled to its display width. Without it, and
    /// without ``width`` or ``height``, the output keeps the source's stored size and writes its
    /// pixel aspect ratio (as FFmpeg does, and HandBrake's automatic anamorphic); a width or height
    /// always gives square pixels.
    public var squarePixels: Bool?
    /// The FFmpeg encoder to make the codec with, one of the codec's (av1: `libsvtav1` or
    /// `libaom-av1`; h264 `libx264`, hevc `libx265`, vp9 `libvpx-vp9`, prores `prores_ks`). Nil:
    /// the first of them this FFmpeg has (av1: SVT-AV1, else libaom). In a cluster a job that
    /// names one is only given to workers that have it.
    public var encoder: String?

    public init(codec: Codec, width: Int? = nil, height: Int? = nil, quality: Int? = nil, bitrate: Int? = nil,
                maxBitrate: Int? = nil, bufferSize: Int? = nil, profile: String? = nil, level: String? = nil,
                preset: String? = nil, keyframeInterval: Int? = nil, frameRate: Rational? = nil,
                pixelFormat: String? = nil, toneMap: Bool? = nil, squarePixels: Bool? = nil,
                encoder: String? = nil) {
        self.codec = codec
        self.width = width
        self.height = height
        self.quality = quality
        self.bitrate = bitrate
        self.maxBitrate = maxBitrate
        self.bufferSize = bufferSize
        self.profile = profile
        self.level = level
        self.preset = preset
        self.keyframeInterval = keyframeInterval
        self.frameRate = frameRate
        self.pixelFormat = pixelFormat
        self.toneMap = toneMap
        self.squarePixels = squarePixels
        self.encoder = encoder
    }

    /// What a `fileType` output gets when no video settings are given: h264, or vp9 for WebM,
    /// everything else from the source (the CLI without video flags, a SUBMIT without `video`).
    public static func defaults(for fileType: OutputFileType) -> VideoSettings {
        VideoSettings(codec: fileType == .webm ? .vp9 : .h264)
    }

    /// Checks every field on its own terms (the source-dependent checks happen when an export
    /// resolves the settings against its asset). Throws the first problem found.
    public func validate() throws(SettingsError) {
        if let width, width <= 0 || width > 16384 {
            throw SettingsError(field: "width", value: "\(width)", allowed: "a whole number of pixels from 1 to 16384")
        }
        if let height, height <= 0 || height > 16384 {
            throw SettingsError(field: "height", value: "\(height)", allowed: "a whole number of pixels from 1 to 16384")
        }
        let descriptor = codec.descriptor
        if let quality {
            guard let range = descriptor.qualityRange else {
                throw SettingsError(field: "crf", value: "\(quality)",
                                    allowed: "unset for prores (choose a profile instead: proxy, lt, standard, hq, 4444, 4444xq)")
            }
            if !range.contains(quality) {
                throw SettingsError(field: "crf", value: "\(quality)",
                                    allowed: "from \(range.lowerBound) to \(range.upperBound) for \(codec)")
            }
            if bitrate != nil {
                throw SettingsError(field: "crf", value: "\(quality)",
                                    allowed: "unset when a video bit rate is given (choose quality or bit rate)")
            }
        }
        if let bitrate, bitrate < 1000 || bitrate > 2_000_000_000 {
            throw SettingsError(field: "video-bitrate", value: "\(bitrate)",
                                allowed: "from 1000 to 2000000000 bits per second (suffixes k and M accepted)")
        }
        if let maxBitrate {
            if maxBitrate < 1000 {
                throw SettingsError(field: "max-bitrate", value: "\(maxBitrate)", allowed: "at least 1000 bits per second")
            }
            if let bitrate, maxBitrate < bitrate {
                throw SettingsError(field: "max-bitrate", value: "\(maxBitrate)",
                                    allowed: "at least the average video bit rate (\(bitrate))")
            }
            if bufferSize == nil {
                throw SettingsError(field: "max-bitrate", value: "\(maxBitrate)",
                                    allowed: "given together with a buffer size")
            }
        }
        if let bufferSize, bufferSize < 1000 {
            throw SettingsError(field: "buffer-size", value: "\(bufferSize)", allowed: "at least 1000 bits")
        }
        if let profile, !descriptor.profiles.contains(profile) {
            throw SettingsError(field: "profile", value: profile, allowed: SettingsError.oneOf(descriptor.profiles) + " for \(codec)")
        }
        if let level {
            guard descriptor.takesLevels else {
                throw SettingsError(field: "level", value: level, allowed: "unset for \(codec) (levels apply to h264 and hevc)")
            }
            if VideoSettings.levelNumber(level) == nil {
                throw SettingsError(field: "level", value: level, allowed: "a level like 3.1, 4, 4.1 or 5.1")
            }
        }
        var presets = descriptor.presets
        if let encoder {
            guard let named = descriptor.encoders.first(where: { $0.name == encoder }) else {
                throw SettingsError(field: "video-encoder", value: encoder,
                                    allowed: SettingsError.oneOf(descriptor.encoders.map(\.name)) + " for \(codec)")
            }
            presets = named.presets ?? presets
        }
        if let preset {
            switch presets {
            case .speeds(let range):
                guard let n = Int(preset), range.contains(n) else {
                    throw SettingsError(field: "preset", value: preset,
                                        allowed: "a speed from \(range.lowerBound) to \(range.upperBound) for "
                                            + (encoder ?? codec.rawValue))
                }
            case .names(let names):
                if !names.contains(preset) {
                    throw SettingsError(field: "preset", value: preset, allowed: SettingsError.oneOf(names))
                }
            case .none:
                throw SettingsError(field: "preset", value: preset, allowed: "unset for \(codec)")
            }
        }
        if let keyframeInterval, keyframeInterval < 1 || keyframeInterval > 10000 {
            throw SettingsError(field: "keyframe-interval", value: "\(keyframeInterval)",
                                allowed: "a number of frames from 1 to 10000")
        }
        if let frameRate, !frameRate.isPositive || frameRate.numerator / frameRate.denominator > 1000 {
            throw SettingsError(field: "frame-rate", value: "\(frameRate)",
                                allowed: "a positive rate up to 1000, like 25, 29.97 or 30000/1001")
        }
    }

    /// The codecs each container holds.
    public static func codecs(for fileType: OutputFileType) -> [Codec] {
        Codec.allCases.filter { $0.descriptor.containers.contains(fileType) }
    }

    /// Checks that the codec fits the container.
    public func validate(for fileType: OutputFileType) throws(SettingsError) {
        let allowed = VideoSettings.codecs(for: fileType)
        if !allowed.contains(codec) {
            throw SettingsError(field: "video-codec", value: codec.rawValue,
                                allowed: SettingsError.oneOf(allowed) + " for a .\(fileType) output")
        }
    }

    /// "4.1" → 41, "4" → 40, "5.2" → 52 (FFmpeg's level numbering); nil when not a level.
    static func levelNumber(_ text: String) -> Int? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let major = Int(parts[0]), (1...6).contains(major) else { return nil }
        let minor = parts.count == 2 ? Int(parts[1]) : 0
        guard let minor, (0...3).contains(minor), parts.count == 1 || parts[1].count == 1 else { return nil }
        return major * 10 + minor
    }
}
