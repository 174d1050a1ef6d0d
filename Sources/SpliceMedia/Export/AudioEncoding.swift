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
        if let fileType {
            let allowed: [AudioSettings.Codec] = switch fileType {
            case .mp4: [.aac, .opus]
            case .mov: [.aac, .pcm]
            case .mkv: AudioSettings.Codec.allCases
            case .webm: [.opus]
            }
            if !allowed.contains(settings.codec) {
                throw SettingsError(field: "audio-codec", value: settings.codec.rawValue,
                                    allowed: SettingsError.oneOf(allowed) + " for a .\(fileType) output")
            }
        }
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
