extension VideoCodecDescriptor {
    /// AV1 by SVT-AV1 where this FFmpeg has it, else libaom.
    static let av1 = VideoCodecDescriptor(
        qualityRange: 0...63, presets: .speeds(0...13), profiles: ["main", "high", "professional"], takesLevels: false, containers: [.mp4, .mkv, .webm], warmsUpAverageRate: false, warmsUpPeakRate: false,
        encoders: [.svtAV1, .libaomAV1], defaultPixelFormat: yuv420AtSourceDepth)

    /// AV1's profile names and their numbers in the sequence header (`seq_profile`).
    static let av1Profiles = ["main": 0, "high": 1, "professional": 2]
}

extension VideoEncoderDescriptor {
    static let svtAV1 = VideoEncoderDescriptor(name: "libsvtav1", defaultQuality: 35,
                                               constantQualityNeedsZeroBitrate: false) { request in
        var setup = EncoderSetup()
        setup.options["preset"] = request.preset ?? "8"
        setup.profileNumber = request.profile.flatMap { VideoCodecDescriptor.av1Profiles[$0] }
        var params: [String] = []
        if request.singleThreaded { params.append("lp=1") }
        if let hdr = request.hdr {
            if let m = hdr.masteringDisplay { params.append("mastering-display=\(m.svtParameter)") }
            if let c = hdr.contentLightLevel { params.append("content-light=\(c.maxContent),\(c.maxFrameAverage)") }
        }
        if !params.isEmpty { setup.options["svtav1-params"] = params.joined(separator: ":") }
        return setup
    }

    /// HDR metadata goes in the container only.
    static let libaomAV1 = VideoEncoderDescriptor(name: "libaom-av1", defaultQuality: 32,
                                                  constantQualityNeedsZeroBitrate: true, presets: .speeds(0...8)) { request in
        var setup = EncoderSetup()
        setup.options["cpu-used"] = request.preset ?? "6"
        setup.options["row-mt"] = "1"
        setup.profileNumber = request.profile.flatMap { VideoCodecDescriptor.av1Profiles[$0] }
        return setup
    }
}
