extension VideoCodecDescriptor {
    /// VP9 by libvpx. No peak-rate warm-up: libvpx's buffer model starts where it is told.
    static let vp9 = VideoCodecDescriptor(
        qualityRange: 0...63, presets: .speeds(0...8), profiles: ["0", "1", "2", "3"], takesLevels: false,
        containers: [.mp4, .mkv, .webm], warmsUpAverageRate: true, warmsUpPeakRate: false,
        encoders: [.libvpxVP9], defaultPixelFormat: yuv420AtSourceDepth)
}

extension VideoEncoderDescriptor {
    /// HDR metadata goes in the container only (Matroska MasteringMetadata, MP4 SmDm/CoLL).
    static let libvpxVP9 = VideoEncoderDescriptor(name: "libvpx-vp9", defaultQuality: 31,
                                                  constantQualityNeedsZeroBitrate: true) { request in
        var setup = EncoderSetup()
        setup.options["cpu-used"] = request.preset ?? "4"
        setup.options["deadline"] = "good"
        setup.options["row-mt"] = "1"
        setup.profileNumber = request.profile.flatMap { Int($0) }
        return setup
    }
}
