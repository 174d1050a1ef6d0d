extension VideoCodecDescriptor {
    /// Apple ProRes by FFmpeg's prores_ks: 4:2:2 10-bit, or 4:4:4 for the 4444 profiles; no CRF,
    /// no presets, no bit rate warm-up.
    static let prores = VideoCodecDescriptor(
        qualityRange: nil, presets: .none, profiles: ["proxy", "lt", "standard", "hq", "4444", "4444xq"],
        takesLevels: false, containers: [.mov, .mkv], warmsUpAverageRate: false, warmsUpPeakRate: false,
        encoders: [.proresKS]) { profile, _ in
            profile == "4444" || profile == "4444xq" ? "yuv444p10le" : "yuv422p10le"
        }
}

extension VideoEncoderDescriptor {
    static let proresKS = VideoEncoderDescriptor(name: "prores_ks", defaultQuality: nil,
                                                 constantQualityNeedsZeroBitrate: false) { request in
        EncoderSetup(options: ["profile": request.profile ?? "standard"])
    }
}
