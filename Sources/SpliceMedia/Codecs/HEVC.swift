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
    /// a segment's threads may reach the headers — a segment that found cores to itself (the last
    /// of a short clip, or alone on a worker) gets more threads than its neighbours (a single-pass
    /// export keeps x265's defaults):
    /// - `info=0`: x265's SEI of its options, which names its thread settings, stays out;
    /// - `wpp=0`: wavefront parallelism (`entropy_coding_sync`, in the PPS) is off in every
    ///   segment; x265 turns it off itself without a thread pool (a lane's `pools=none`) and on
    ///   with one. Off, not on: on two lanes of a 22 s 960×540 clip, lanes with a pool of two and
    ///   wavefronts kept 1.94 of 2 cores busy instead of 1.81 but spent 4–8 % more CPU and wrote
    ///   2 % more bytes for the same PSNR, and finished no sooner. Segments with more threads get a
    ///   pool that size, for x265's frame threads.
    static let x265 = VideoEncoderDescriptor(name: "libx265", defaultQuality: 28, constantQualityNeedsZeroBitrate: false) { request in
        var setup = EncoderSetup()
        setup.options["preset"] = request.preset ?? "medium"
        if let profile = request.profile { setup.options["profile"] = profile }
        setup.options["forced-idr"] = "1"
        var params = ["log-level=error"]
        // Segments (every one a closed GOP): the headers must not depend on the threads.
        if request.closedGOP { params.append(contentsOf: ["info=0", "wpp=0"]) }
        if let fill = request.bufferFill { params.append("vbv-init=\(fill)") }
        if let level = request.level { params.append("level-idc=\(level)") }
        if request.singleThreaded {
            params.append(contentsOf: ["pools=none", "frame-threads=1"])
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
