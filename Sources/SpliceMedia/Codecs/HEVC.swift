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
    /// segment's must be alike, so they are always given in one order, and nothing that follows
    /// the segment's threads may reach the headers — a segment that found cores to itself (the
    /// last of a short clip, or alone on a worker) gets more threads than its neighbours:
    /// - `info=0`: x265's SEI of its options, which names its thread settings, stays out;
    /// - wavefront parallelism (`entropy_coding_sync`, in the PPS) is always on: x265 turns it off
    ///   without a thread pool (`pools=none`), so every segment gets a pool. A lane's is two
    ///   threads with one frame at a time: WPP rows on the second thread use a core another lane
    ///   has freed, so the lane still encoding when the others have finished speeds up instead of
    ///   leaving cores idle (a 22 s 960×540 clip in four segments on two lanes: 10.4 s against
    ///   11.4 s with one thread, one FFmpeg 10.7 s). Segments with more threads get a pool that size.
    static let x265 = VideoEncoderDescriptor(name: "libx265", defaultQuality: 28, constantQualityNeedsZeroBitrate: false) { request in
        var setup = EncoderSetup()
        setup.options["preset"] = request.preset ?? "medium"
        if let profile = request.profile { setup.options["profile"] = profile }
        setup.options["forced-idr"] = "1"
        var params = ["log-level=error", "info=0"]
        if let fill = request.bufferFill { params.append("vbv-init=\(fill)") }
        if let level = request.level { params.append("level-idc=\(level)") }
        if request.singleThreaded {
            params.append(contentsOf: ["pools=2", "frame-threads=1"])
        } else if request.threads > 1 {
            params.append("pools=\(request.threads)")
        }
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
