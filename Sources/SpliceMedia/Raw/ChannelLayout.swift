internal import CFFmpeg

/// Owns an `AVChannelLayout` (uninitialised in deinit, which frees custom maps).
final class ChannelLayout {
    var layout = AVChannelLayout()

    /// A layout by FFmpeg name ("stereo", "5.1"); nil when FFmpeg does not know the name.
    init?(name: String) {
        if av_channel_layout_from_string(&layout, name) < 0 { return nil }
    }

    /// FFmpeg's default layout for `channels` channels.
    init(defaultFor channels: Int) {
        av_channel_layout_default(&layout, Int32(channels))
    }

    /// A copy of an existing layout. A layout FFmpeg only knows by channel count ("unspecified
    /// order", common in some containers) becomes the default layout for that count, so mixing
    /// matrices can be built.
    init(copying other: AVChannelLayout) {
        var source = other
        if source.order == AV_CHANNEL_ORDER_UNSPEC || av_channel_layout_check(&source) == 0 {
            av_channel_layout_default(&layout, max(1, source.nb_channels))
        } else {
            _ = av_channel_layout_copy(&layout, &source)
        }
    }

    deinit { av_channel_layout_uninit(&layout) }

    var channelCount: Int { Int(layout.nb_channels) }

    var name: String {
        var buffer = [CChar](repeating: 0, count: 128)
        return av_channel_layout_describe(&layout, &buffer, buffer.count) > 0 ? FFmpeg.string(buffer) : "\(channelCount) channels"
    }
}
