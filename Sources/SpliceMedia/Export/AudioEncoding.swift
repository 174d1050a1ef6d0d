internal import CFFmpeg

/// Audio settings resolved against a source track, every default filled in.
struct AudioEncoding: Sendable, Hashable, Codable {
    var codec: AudioSettings.Codec
    /// FFmpeg encoder name (aac, libopus, pcm_s16le, pcm_s24le).
    var encoderName: String
    var sampleRate: Int
    /// FFmpeg channel layout name ("stereo", "5.1").
    var channelLayout: String
    var channels: Int
    var bitrate: Int?

    static func resolve(_ settings: AudioSettings, source: Track, fileType: OutputFileType?) throws(SettingsError) -> AudioEncoding {
        try settings.validate()
        if let fileType { try settings.validate(for: fileType) }
        let sourceRate = source.sampleRate ?? 48000
        let sampleRate: Int
        switch settings.codec {
        case .aac: sampleRate = settings.sampleRate ?? (AudioSettings.aacRates.contains(sourceRate) ? sourceRate : 48000)
        case .opus: sampleRate = settings.sampleRate ?? 48000
        case .pcm: sampleRate = settings.sampleRate ?? sourceRate
        }
        let layout: ChannelLayout
        if let name = settings.channelLayout {
            guard let l = ChannelLayout(name: name) else {
                throw SettingsError(field: "channel-layout", value: name, allowed: "an FFmpeg layout name such as mono, stereo, 5.1")
            }
            layout = l
        } else {
            layout = ChannelLayout(defaultFor: settings.channels ?? min(8, max(1, source.channels ?? 2)))
        }
        let encoderName: String = switch settings.codec {
        case .aac: "aac"
        case .opus: "libopus"
        case .pcm: (source.sampleFormat == "s32" || source.sampleFormat == "s32p" || source.sampleFormat == "flt"
                    || source.sampleFormat == "fltp" && source.codecName.hasPrefix("pcm")) ? "pcm_s24le" : "pcm_s16le"
        }
        guard avcodec_find_encoder_by_name(encoderName) != nil else {
            throw SettingsError(field: "audio-codec", value: settings.codec.rawValue,
                                allowed: "a codec this FFmpeg can encode (no \(encoderName))")
        }
        let bitrate: Int? = settings.codec == .pcm ? nil : (settings.bitrate ?? 64_000 * layout.channelCount)
        return AudioEncoding(codec: settings.codec, encoderName: encoderName, sampleRate: sampleRate,
                             channelLayout: layout.name, channels: layout.channelCount, bitrate: bitrate)
    }
}

extension AudioEncoding {
    /// The encoder's packet size and priming, learned by opening it, with the pre-roll and tail
    /// segments need.
    ///
    /// Pre-roll is far longer than the bare minimum (AAC 2 packets, Opus 80 ms) because encoders
    /// also settle their rate control. FFmpeg's AAC adapts its quantiser over about ten seconds:
    /// measured on a lossless stereo sweep over pink noise at 128 kbit/s, a 4 s stretch encoded
    /// from a standing start reaches 29.8 dB median block SNR, 31.4 with 4 s of pre-roll, 32.7
    /// with 8 s, 33.8 with 12 s — the whole-file encode's own level (33.6). So AAC segments start
    /// 12 s early (cheap: audio encodes at hundreds of times real time, and audio segments are
    /// long). libopus matched a single pass at every join with 16 packets (320 ms) but not with 4.
    /// PCM needs none.
    func framing() throws(MediaError) -> AudioFraming {
        let encoder = try CodecContext.encoder(named: encoderName)
        guard let layout = ChannelLayout(name: channelLayout) else {
            throw MediaError(.invalidSettings, "unknown channel layout '\(channelLayout)'")
        }
        let ctx = encoder.pointer
        ctx.pointee.sample_rate = Int32(sampleRate)
        _ = av_channel_layout_copy(&ctx.pointee.ch_layout, &layout.layout)
        ctx.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        if let b = bitrate { ctx.pointee.bit_rate = Int64(b) }
        if let formats = encoder.codec.pointee.sample_fmts { ctx.pointee.sample_fmt = formats.pointee }
        try encoder.open(options: [:])
        let frameSize = ctx.pointee.frame_size > 0 ? Int(ctx.pointee.frame_size) : 1024
        let priming = Int(ctx.pointee.initial_padding)
        let preRoll: Int, tail: Int
        switch codec {
        case .aac: (preRoll, tail) = ((sampleRate * AudioEncoding.aacPreRollSeconds + frameSize - 1) / frameSize, 2)
        case .opus: (preRoll, tail) = (max(16, (sampleRate * 80 / 1000 + frameSize - 1) / frameSize), 2)
        case .pcm: (preRoll, tail) = (0, 0)
        }
        return AudioFraming(sampleRate: sampleRate, samplesPerPacket: frameSize, priming: priming,
                            preRollPackets: preRoll, tailPackets: tail)
    }

    /// Seconds of real audio an AAC segment encodes before its cut (see ``framing()``).
    static let aacPreRollSeconds = 12
}
