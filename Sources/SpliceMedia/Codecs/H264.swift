extension VideoCodecDescriptor {
    /// H.264 by x264.
    static let h264 = VideoCodecDescriptor(
        qualityRange: 0...51, presets: .names(x26xPresets),
        profiles: ["baseline", "main", "high", "high10", "high422", "high444"], takesLevels: true,
        containers: [.mp4, .mov, .mkv], warmsUpAverageRate: true, warmsUpPeakRate: true,
        encoders: [.x264], defaultPixelFormat: yuv420AtSourceDepth)

    /// x264's and x265's preset names, fastest first.
    static let x26xPresets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
                              "veryslow", "placebo"]
}

extension VideoEncoderDescriptor {
    static let x264 = VideoEncoderDescriptor(name: "libx264", defaultQuality: 23, constantQualityNeedsZeroBitrate: false) { request in
        var setup = EncoderSetup()
        setup.options["preset"] = request.preset ?? "medium"
        if let profile = request.profile { setup.options["profile"] = profile }
        if request.singleThreaded { setup.options["threads"] = "1" }
        // A keyframe asked for mid-stream (the first frame after a rate-control warm-up) is an IDR.
        setup.options["forced-idr"] = "1"
        setup.level = request.level.flatMap(VideoSettings.levelNumber)
        var params: [String] = []
        if let tolerance = request.rateTolerance { params.append("ratetol=\(tolerance)") }
        if let fill = request.bufferFill { params.append("vbv-init=\(fill)") }
        if let hdr = request.hdr {
            if let m = hdr.masteringDisplay { params.append("mastering-display=\(m.x26xParameter)") }
            if let c = hdr.contentLightLevel { params.append("cll=\(c.maxContent),\(c.maxFrameAverage)") }
        }
        if !params.isEmpty { setup.options["x264-params"] = params.joined(separator: ":") }
        return setup
    }
}
