/// Everything Splice knows about one video codec, in one place: what its settings may say, the
/// containers it fits, how its segments join, and the encoders that make it (in order of
/// preference). Settings validation, encoder resolution, rate control and the worker's list of
/// encoders all read it; adding a codec is a case in ``VideoSettings/Codec``, a descriptor in its
/// own file beside this one, and the encoder descriptors it names.
struct VideoCodecDescriptor: Sendable {
    /// The constant-quality (CRF) values its encoders take; nil when it has no CRF (prores).
    let qualityRange: ClosedRange<Int>?
    /// How `--preset` is spelled for it.
    let presets: PresetVocabulary
    /// The `--profile` names it takes.
    let profiles: [String]
    /// Whether `--level` applies.
    let takesLevels: Bool
    /// The containers that hold it.
    let containers: Set<OutputFileType>
    /// Whether its segments warm their rate control up before their start (``RateControl``): with
    /// an average bit rate, and with a peak rate.
    let warmsUpAverageRate: Bool
    let warmsUpPeakRate: Bool
    /// Its encoders, the preferred first: the first this FFmpeg has is used.
    let encoders: [VideoEncoderDescriptor]
    /// The pixel format used when none is asked for, given the profile asked for and whether the
    /// source has more than 8 bits (and keeps them).
    let defaultPixelFormat: @Sendable (_ profile: String?, _ deep: Bool) -> String

    /// How a codec's `--preset` is spelled.
    enum PresetVocabulary: Sendable {
        /// Named speeds (x264's and x265's ultrafast … placebo).
        case names([String])
        /// A number, faster as it grows (libvpx's and libaom's cpu-used, SVT-AV1's preset).
        case speeds(ClosedRange<Int>)
        /// No presets (prores: choose a profile).
        case none
    }

    /// 4:2:0, at 10 bits when the source has more than 8 and the codec carries them.
    static let yuv420AtSourceDepth: @Sendable (String?, Bool) -> String = { _, deep in deep ? "yuv420p10le" : "yuv420p" }
}

extension VideoSettings.Codec {
    /// This codec's descriptor: the only `switch` over codecs that says what a codec is.
    var descriptor: VideoCodecDescriptor {
        switch self {
        case .h264: .h264
        case .hevc: .hevc
        case .vp9: .vp9
        case .av1: .av1
        case .prores: .prores
        }
    }
}
