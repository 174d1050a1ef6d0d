/// One FFmpeg video encoder as Splice drives it: its name, its default quality and how the
/// request's terms (preset, profile, level, threading, a segment's rate-control needs, HDR
/// metadata) become its own private options.
struct VideoEncoderDescriptor: Sendable {
    /// FFmpeg's name for it (`avcodec_find_encoder_by_name`).
    let name: String
    /// The CRF used when neither a quality nor a bit rate is asked for (nil: no CRF).
    let defaultQuality: Int?
    /// Whether constant quality needs a zero target bit rate (libvpx and libaom are in
    /// constant-quality mode only then).
    let constantQualityNeedsZeroBitrate: Bool
    /// How its `--preset` is spelled when that differs from its codec's other encoders
    /// (libaom's cpu-used is 0–8, SVT-AV1's preset 0–13); nil: the codec's.
    var presets: VideoCodecDescriptor.PresetVocabulary? = nil
    /// Turns what is asked into the encoder's private options.
    let configure: @Sendable (EncoderRequest) -> EncoderSetup

    /// What an encoder is asked for, in the terms all encoders share.
    struct EncoderRequest: Sendable {
        var preset: String?
        var profile: String?
        var level: String?
        /// Encoder threads: 1 for a segment lane with its own core budget, more for a segment
        /// that has cores to itself, 0 for the encoder's own choice.
        var threads: Int
        /// One thread only (a segment lane with its own core budget).
        var singleThreaded: Bool { threads == 1 }
        /// Segments: every keyframe a clean entry point.
        var closedGOP: Bool
        /// The rate tolerance a bit-rate segment keeps to (``RateControl/segmentRateTolerance(length:)``).
        var rateTolerance: String?
        /// The buffer fullness a peak-rate segment starts from (``RateControl/segmentBufferFill``).
        var bufferFill: String?
        /// HDR10 metadata to write into the bitstream, where the encoder can.
        var hdr: HDRMetadata?
    }

    /// An encoder's private options and the codec-context fields it sets.
    struct EncoderSetup: Sendable {
        var options: [String: String] = [:]
        var profileNumber: Int?
        var level: Int?
    }
}
