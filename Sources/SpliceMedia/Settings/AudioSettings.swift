/// How to encode audio. `nil` audio settings on an export mean pass-through (packets copied).
///
/// Fields left `nil` take defaults from the source when the export starts: the source sample rate
/// (48 kHz for Opus unless the source rate is one Opus takes), the source channel count, and
/// 64 kbit/s per channel (the MovieRecorder rule).
public struct AudioSettings: Sendable, Codable, Hashable {
    /// The audio codecs Splice encodes.
    public enum Codec: String, Sendable, Codable, Hashable, CaseIterable, CustomStringConvertible {
        case aac, opus, pcm
        public var description: String { rawValue }
    }

    public var codec: Codec
    /// Output sample rate in Hz; the audio is resampled when it differs from the source.
    public var sampleRate: Int?
    /// Output channel count; the audio is remixed (5.1 → stereo, mono → stereo) when it differs.
    public var channels: Int?
    /// Output channel layout by FFmpeg name ("mono", "stereo", "5.1"); overrides ``channels``.
    public var channelLayout: String?
    /// Bit rate in bits per second (not used by pcm).
    public var bitrate: Int?

    public init(codec: Codec, sampleRate: Int? = nil, channels: Int? = nil, channelLayout: String? = nil,
                bitrate: Int? = nil) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.channelLayout = channelLayout
        self.bitrate = bitrate
    }

    /// What a `fileType` output's audio tracks get when no audio settings are given: aac, or opus
    /// for WebM, everything else from the source (the CLI without audio flags, a SUBMIT without
    /// `audio`).
    public static func defaults(for fileType: OutputFileType) -> AudioSettings {
        AudioSettings(codec: fileType == .webm ? .opus : .aac)
    }

    /// Sample rates each codec accepts.
    static let aacRates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000]
    static let opusRates = [8000, 12000, 16000, 24000, 48000]

    /// The codecs each container holds.
    public static func codecs(for fileType: OutputFileType) -> [Codec] {
        switch fileType {
        case .mp4: [.aac, .opus]
        case .mov: [.aac, .pcm]
        case .mkv: Codec.allCases
        case .webm: [.opus]
        }
    }

    /// Checks that the codec fits the container.
    public func validate(for fileType: OutputFileType) throws(SettingsError) {
        let allowed = AudioSettings.codecs(for: fileType)
        if !allowed.contains(codec) {
            throw SettingsError(field: "audio-codec", value: codec.rawValue,
                                allowed: SettingsError.oneOf(allowed) + " for a .\(fileType) output")
        }
    }

    /// Checks every field on its own terms. Throws the first problem found.
    public func validate() throws(SettingsError) {
        if let sampleRate {
            switch codec {
            case .aac where !AudioSettings.aacRates.contains(sampleRate):
                throw SettingsError(field: "sample-rate", value: "\(sampleRate)",
                                    allowed: SettingsError.oneOf(AudioSettings.aacRates) + " for aac")
            case .opus where !AudioSettings.opusRates.contains(sampleRate):
                throw SettingsError(field: "sample-rate", value: "\(sampleRate)",
                                    allowed: SettingsError.oneOf(AudioSettings.opusRates) + " for opus")
            case .pcm where sampleRate < 1000 || sampleRate > 384_000:
                throw SettingsError(field: "sample-rate", value: "\(sampleRate)", allowed: "from 1000 to 384000 Hz")
            default: break
            }
        }
        if let channels, channels < 1 || channels > 8 {
            throw SettingsError(field: "channels", value: "\(channels)", allowed: "from 1 to 8")
        }
        if let channelLayout, ChannelLayout(name: channelLayout) == nil {
            throw SettingsError(field: "channel-layout", value: channelLayout,
                                allowed: "an FFmpeg layout name such as mono, stereo, 2.1, 5.1, 7.1")
        }
        if let bitrate {
            if codec == .pcm {
                throw SettingsError(field: "audio-bitrate", value: "\(bitrate)", allowed: "unset for pcm (it is uncompressed)")
            }
            if bitrate < 6000 || bitrate > 1_536_000 {
                throw SettingsError(field: "audio-bitrate", value: "\(bitrate)",
                                    allowed: "from 6000 to 1536000 bits per second (suffix k accepted)")
            }
        }
    }
}
