extension VideoCodecDescriptor {
    /// HEVC by x265.
    static let hevc = VideoCodecDescriptor(
        qualityRange: 0...51, presets: .names(x26xPresets),
        profiles: ["main", "main10", "main422-10", "main444-8", "main444-10"], takesLevels: true,
        containers: [.mp4, .mov, .mkv], warmsUpAverageRate: true, warmsUpPeakRate: true,
        encoders: [.x265], defaultPixelFormat: yuv420AtSourceDepth)
}

extension VideoEncoderDescriptor {
    /// x265 writes its parameters into the codec headers, which the stitcher compares: every
    /// segment's must be alike, so they are always given in one order.
    static let x265 = VideoEncoderDescriptor(name: "libx265", defaultQuality: 28, constantQualityNeedsZeroBitrate: false) { request in
        var setup = EncoderSetup()
        setup.options["preset"] = request.preset ?? "medium"
        if let profile = request.profile { setup.options["profile"] = profile }
        setup.options["forced-idr"] = "1"
        var params = ["log-level=error"]
        if let fill = request.bufferFill { params.append("vbv-init=\(fill)") }
        if let level = request.level { params.append("level-idc=\(level)") }
        if request.singleThreaded { params.append(contentsOf: ["pools=none", "frame-threads=1"]) }
        if request.closedGOP { params.append("open-gop=0") }
        if let hdr = request.hdr {
            params.append("hdr10=1")
            if let m = hdr.masteringDisplay { params.append("master-display=\(m.x26xParameter)") }
            if let c = hdr.contentLightLevel { params.append("max-cll=\(c.maxContent),\(c.maxFrameAverage)") }
        }
        setup.options["x265-params"] = params.joined(separator: ":")
        return setup
    }
}
