internal import CFFmpeg
import Foundation

/// The codec parameters of one stream (FFmpeg's `AVCodecParameters`) as plain values, so a
/// segment file can carry them and the stitcher can compare them field by field.
struct CodecParameters: Codable, Sendable, Hashable {
    var mediaType: String
    var codecName: String
    var extradata: Data
    /// Pixel or sample format name.
    var format: String?
    var bitRate: Int64
    var bitsPerCodedSample: Int32
    var bitsPerRawSample: Int32
    var profile: Int32
    var level: Int32
    var width: Int32
    var height: Int32
    var sampleAspectRatio: Rational
    var fieldOrder: UInt32
    var colorRange: UInt32
    var colorPrimaries: UInt32
    var colorTransfer: UInt32
    var colorSpace: UInt32
    var chromaLocation: UInt32
    var videoDelay: Int32
    var channelLayout: String?
    var channels: Int32
    var sampleRate: Int32
    var blockAlign: Int32
    var frameSize: Int32
    var initialPadding: Int32
    var trailingPadding: Int32
    var seekPreroll: Int32
    /// The stream's time base.
    var timeBase: Rational
    var frameRate: Rational?

    init(_ par: UnsafePointer<AVCodecParameters>, timeBase: AVRational, frameRate: Rational?) {
        let p = par.pointee
        mediaType = FFmpeg.string(av_get_media_type_string(p.codec_type)) ?? "unknown"
        codecName = FFmpeg.string(avcodec_get_name(p.codec_id)) ?? "none"
        extradata = p.extradata.map { Data(bytes: $0, count: Int(p.extradata_size)) } ?? Data()
        if p.codec_type == AVMEDIA_TYPE_VIDEO {
            format = FFmpeg.string(av_get_pix_fmt_name(AVPixelFormat(p.format)))
        } else if p.codec_type == AVMEDIA_TYPE_AUDIO {
            format = FFmpeg.string(av_get_sample_fmt_name(AVSampleFormat(p.format)))
        }
        bitRate = p.bit_rate
        bitsPerCodedSample = p.bits_per_coded_sample
        bitsPerRawSample = p.bits_per_raw_sample
        profile = p.profile
        level = p.level
        width = p.width
        height = p.height
        sampleAspectRatio = Rational(p.sample_aspect_ratio)
        fieldOrder = p.field_order.rawValue
        colorRange = p.color_range.rawValue
        colorPrimaries = p.color_primaries.rawValue
        colorTransfer = p.color_trc.rawValue
        colorSpace = p.color_space.rawValue
        chromaLocation = p.chroma_location.rawValue
        videoDelay = p.video_delay
        channels = p.ch_layout.nb_channels
        if p.ch_layout.nb_channels > 0 {
            var layout = p.ch_layout
            var buffer = [CChar](repeating: 0, count: 128)
            channelLayout = av_channel_layout_describe(&layout, &buffer, buffer.count) > 0 ? FFmpeg.string(buffer) : nil
        }
        sampleRate = p.sample_rate
        blockAlign = p.block_align
        frameSize = p.frame_size
        initialPadding = p.initial_padding
        trailingPadding = p.trailing_padding
        seekPreroll = p.seek_preroll
        self.timeBase = Rational(timeBase)
        self.frameRate = frameRate
    }

    /// Fills `par` (freshly allocated, e.g. a new stream's) with these values.
    func apply(to par: UnsafeMutablePointer<AVCodecParameters>) throws(MediaError) {
        guard let descriptor = avcodec_descriptor_get_by_name(codecName) else {
            throw MediaError(.unsupportedCodec, "this FFmpeg does not know codec '\(codecName)'")
        }
        par.pointee.codec_type = descriptor.pointee.type
        par.pointee.codec_id = descriptor.pointee.id
        par.pointee.codec_tag = 0
        if !extradata.isEmpty {
            let size = extradata.count
            guard let buffer = av_mallocz(size + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) else {
                throw MediaError(.internalError, "out of memory")
            }
            extradata.copyBytes(to: buffer, count: size)
            av_freep(&par.pointee.extradata)
            par.pointee.extradata = buffer
            par.pointee.extradata_size = Int32(size)
        }
        if let format {
            par.pointee.format = descriptor.pointee.type == AVMEDIA_TYPE_VIDEO
                ? av_get_pix_fmt(format).rawValue : av_get_sample_fmt(format).rawValue
        }
        par.pointee.bit_rate = bitRate
        par.pointee.bits_per_coded_sample = bitsPerCodedSample
        par.pointee.bits_per_raw_sample = bitsPerRawSample
        par.pointee.profile = profile
        par.pointee.level = level
        par.pointee.width = width
        par.pointee.height = height
        par.pointee.sample_aspect_ratio = sampleAspectRatio.av
        par.pointee.field_order = AVFieldOrder(fieldOrder)
        par.pointee.color_range = AVColorRange(colorRange)
        par.pointee.color_primaries = AVColorPrimaries(colorPrimaries)
        par.pointee.color_trc = AVColorTransferCharacteristic(colorTransfer)
        par.pointee.color_space = AVColorSpace(colorSpace)
        par.pointee.chroma_location = AVChromaLocation(chromaLocation)
        par.pointee.video_delay = videoDelay
        if let channelLayout, let layout = ChannelLayout(name: channelLayout) {
            _ = av_channel_layout_copy(&par.pointee.ch_layout, &layout.layout)
        } else if channels > 0 {
            av_channel_layout_default(&par.pointee.ch_layout, channels)
        }
        par.pointee.sample_rate = sampleRate
        par.pointee.block_align = blockAlign
        par.pointee.frame_size = frameSize
        par.pointee.initial_padding = initialPadding
        par.pointee.trailing_padding = trailingPadding
        par.pointee.seek_preroll = seekPreroll
    }

    /// The first field in which two segments' streams differ (bit rates may differ), or nil.
    func firstDifference(from other: CodecParameters) -> String? {
        var a = self, b = other
        a.bitRate = 0
        b.bitRate = 0
        if a == b { return nil }
        if a.codecName != b.codecName { return "codec (\(a.codecName) vs \(b.codecName))" }
        if a.extradata != b.extradata { return "codec headers (extradata, \(a.extradata.count) vs \(b.extradata.count) bytes)" }
        if a.width != b.width || a.height != b.height { return "size (\(a.width)x\(a.height) vs \(b.width)x\(b.height))" }
        if a.format != b.format { return "format (\(a.format ?? "?") vs \(b.format ?? "?"))" }
        if a.sampleRate != b.sampleRate { return "sample rate (\(a.sampleRate) vs \(b.sampleRate))" }
        if a.channelLayout != b.channelLayout { return "channel layout" }
        if a.timeBase != b.timeBase { return "time base (\(a.timeBase) vs \(b.timeBase))" }
        return "stream parameters"
    }
}
