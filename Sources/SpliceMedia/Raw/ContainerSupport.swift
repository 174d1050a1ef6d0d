internal import CFFmpeg

/// What FFmpeg's muxers can hold.
enum ContainerSupport {
    /// Whether the muxer `muxerName` can store codec `codecName` (FFmpeg short names). When FFmpeg
    /// cannot tell (the muxer keeps no codec table), the answer is yes and the muxer decides later.
    static func canHold(codecName: String, in muxerName: String) -> Bool {
        guard let format = av_guess_format(muxerName, nil, nil),
              let descriptor = avcodec_descriptor_get_by_name(codecName) else { return false }
        return avformat_query_codec(format, descriptor.pointee.id, FF_COMPLIANCE_NORMAL) != 0
    }
}
