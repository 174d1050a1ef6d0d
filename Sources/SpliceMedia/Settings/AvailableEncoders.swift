internal import CFFmpeg

/// The FFmpeg encoders Splice can drive that this process's FFmpeg actually has: a worker lists
/// them in its HELLO so the coordinator knows what it can encode.
public enum AvailableEncoders {
    /// Every encoder the video and audio settings may resolve to, in a stable order.
    static let candidates = VideoSettings.Codec.allCases.flatMap { $0.descriptor.encoders.map(\.name) }
        + ["aac", "libopus", "pcm_s16le", "pcm_s24le"]

    /// The candidates `avcodec_find_encoder_by_name` finds.
    public static let names: [String] = candidates.filter { avcodec_find_encoder_by_name($0) != nil }
}
