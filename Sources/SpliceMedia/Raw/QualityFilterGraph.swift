internal import CFFmpeg

/// Owns an `AVFilterGraph` (freed in deinit) that scores distorted pictures against their
/// references with FFmpeg's own `psnr` and `ssim` filters:
///
///     [ref]split[r1][r2]; [main][r1]psnr[scored]; [scored][r2]ssim[out]
///
/// Each filter leaves its per-frame result in the main picture's metadata (`lavfi.psnr.mse.y`,
/// `lavfi.psnr.mse_avg`, `lavfi.ssim.Y`, `lavfi.ssim.All`), which is read back from the sink, so
/// the figures are exactly those `ffmpeg -lavfi psnr,ssim` prints. Both inputs must have the
/// picture size and pixel format given at creation; pictures are paired by presentation time.
/// Confined to one thread.
final class QualityFilterGraph {
    /// One scored picture: its presentation time (the graph's time base) and FFmpeg's figures.
    struct Score {
        var pts: Int64
        var mseY: Double
        var mse: Double
        var ssimY: Double
        var ssim: Double
    }

    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private let main: UnsafeMutablePointer<AVFilterContext>
    private let reference: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    private let scored = Frame()
    private var closed = false

    /// A graph for `width`×`height` pictures in `pixelFormat`, timed in `timeBase`, running the
    /// filters on `threads` threads (slice threading; 0 lets FFmpeg choose).
    init(width: Int, height: Int, pixelFormat: Int32, timeBase: Rational, threads: Int) throws(MediaError) {
        _ = FFmpeg.setUp
        var graph = avfilter_graph_alloc()
        guard let built = graph else { fatalError("avfilter_graph_alloc: out of memory") }
        // Until every stored property is set the graph is this function's to free; the graph owns
        // every filter context it creates, so freeing it frees them too.
        do {
            (main, reference, sink) = try Self.build(built, width: width, height: height, pixelFormat: pixelFormat,
                                                     timeBase: timeBase, threads: threads)
        } catch {
            avfilter_graph_free(&graph)
            throw error
        }
        self.graph = built
    }

    private static func build(_ graph: UnsafeMutablePointer<AVFilterGraph>, width: Int, height: Int, pixelFormat: Int32,
                              timeBase: Rational, threads: Int) throws(MediaError)
        -> (UnsafeMutablePointer<AVFilterContext>, UnsafeMutablePointer<AVFilterContext>, UnsafeMutablePointer<AVFilterContext>) {
        graph.pointee.nb_threads = Int32(max(0, threads))
        let args = "video_size=\(width)x\(height):pix_fmt=\(pixelFormat):time_base=\(timeBase.numerator)/"
            + "\(timeBase.denominator):pixel_aspect=1/1"
        func create(_ filter: String, _ name: String, _ arguments: String?) throws(MediaError)
            -> UnsafeMutablePointer<AVFilterContext> {
            var context: UnsafeMutablePointer<AVFilterContext>?
            let ret = avfilter_graph_create_filter(&context, avfilter_get_by_name(filter), name, arguments, nil, graph)
            guard ret >= 0, let context else {
                throw FFmpeg.error(.internalError, "cannot create FFmpeg's \(filter) filter for quality measurement", ret)
            }
            return context
        }
        let main = try create("buffer", "main", args)
        let reference = try create("buffer", "ref", args)
        let sink = try create("buffersink", "out", nil)
        // Open ends of the description: its inputs `main` and `ref` are our sources' outputs, its
        // output `out` the sink's input. The parser consumes what it links; the rest is freed here.
        var outputs = inOut([("main", main), ("ref", reference)])
        var inputs = inOut([("out", sink)])
        let description = "[ref]split[r1][r2];[main][r1]psnr[scored];[scored][r2]ssim[out]"
        var ret = avfilter_graph_parse_ptr(graph, description, &inputs, &outputs, nil)
        avfilter_inout_free(&inputs)
        avfilter_inout_free(&outputs)
        if ret >= 0 { ret = avfilter_graph_config(graph, nil) }
        if ret < 0 { throw FFmpeg.error(.internalError, "cannot set up FFmpeg's psnr and ssim filters", ret) }
        return (main, reference, sink)
    }

    deinit { avfilter_graph_free(&graph) }

    /// Whether this FFmpeg's libavfilter has the named filter (`libvmaf` is not in Debian's).
    static func hasFilter(_ name: String) -> Bool { avfilter_get_by_name(name) != nil }

    /// A linked list of open filter pads, each named `label`, for the graph parser.
    private static func inOut(_ pads: [(String, UnsafeMutablePointer<AVFilterContext>)]) -> UnsafeMutablePointer<AVFilterInOut>? {
        var head: UnsafeMutablePointer<AVFilterInOut>?
        for (label, context) in pads.reversed() {
            guard let node = avfilter_inout_alloc() else { fatalError("avfilter_inout_alloc: out of memory") }
            node.pointee.name = av_strdup(label)
            node.pointee.filter_ctx = context
            node.pointee.pad_idx = 0
            node.pointee.next = head
            head = node
        }
        return head
    }

    /// Scores `distorted` against `reference` (both presented at `pts`); returns every score the
    /// filters have finished, in presentation order (the filters may hold a picture back).
    func push(distorted: Frame, reference picture: Frame, pts: Int64) throws(MediaError) -> [Score] {
        distorted.pts = pts
        picture.pts = pts
        let flags = Int32(AV_BUFFERSRC_FLAG_KEEP_REF)
        var ret = av_buffersrc_add_frame_flags(main, distorted.pointer, flags)
        if ret >= 0 { ret = av_buffersrc_add_frame_flags(reference, picture.pointer, flags) }
        if ret < 0 { throw FFmpeg.error(.internalError, "FFmpeg's quality filters refused a picture", ret) }
        return try drain()
    }

    /// Ends both inputs and returns the scores still held.
    func finish() throws(MediaError) -> [Score] {
        guard !closed else { return [] }
        closed = true
        var ret = av_buffersrc_add_frame_flags(main, nil, 0)
        if ret >= 0 { ret = av_buffersrc_add_frame_flags(reference, nil, 0) }
        if ret < 0 { throw FFmpeg.error(.internalError, "cannot end FFmpeg's quality filters", ret) }
        return try drain()
    }

    private func drain() throws(MediaError) -> [Score] {
        var scores: [Score] = []
        while true {
            scored.unref()
            let ret = av_buffersink_get_frame(sink, scored.pointer)
            if ret == FFmpeg.eagain || ret == FFmpeg.eof { break }
            if ret < 0 { throw FFmpeg.error(.internalError, "FFmpeg's quality filters failed", ret) }
            let metadata = scored.pointer.pointee.metadata
            func value(_ key: String) throws(MediaError) -> Double {
                guard let entry = av_dict_get(metadata, key, nil, 0), let number = Double(String(cString: entry.pointee.value))
                else { throw MediaError(.internalError, "FFmpeg's quality filters left no \(key) on a picture") }
                return number
            }
            scores.append(Score(pts: scored.pts, mseY: try value("lavfi.psnr.mse.y"), mse: try value("lavfi.psnr.mse_avg"),
                                ssimY: try value("lavfi.ssim.Y"), ssim: try value("lavfi.ssim.All")))
        }
        return scores
    }
}
