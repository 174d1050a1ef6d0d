internal import CFFmpeg

/// Measures an encoder's output against the very pictures it was given, while it encodes: each
/// picture handed to the encoder is kept (a reference, not a copy) until the encoder's packets
/// for it have been decoded back, then both go through FFmpeg's `psnr` and `ssim` filters
/// (``QualityFilterGraph``). The source is decoded once, by the export itself: what is compared
/// is the source as the encode fitted it (scaled, padded, turned, tone mapped, on its frame-rate
/// grid), so a resize or a rotation compares like with like. Pictures wait for as long as the
/// encoder holds them (its lookahead), which is the memory this costs. Confined to one thread.
final class QualityMeter {
    private let decoder: CodecContext
    private let graph: QualityFilterGraph
    /// Pictures given to the encoder and not yet read back, by presentation time.
    private var references: [Int64: Frame] = [:]
    private let decoded = Frame()
    private var series: QualitySeries
    private var finished = false

    /// A meter for `encoder` (opened), whose pictures are `encoding`'s.
    init(encoder: CodecContext, encoding: VideoEncoding, threads: Int) throws(MediaError) {
        decoder = try CodecContext.decoder(readingBack: encoder, threads: threads)
        let format = av_get_pix_fmt(encoding.pixelFormat)
        graph = try QualityFilterGraph(width: encoding.width, height: encoding.height, pixelFormat: format.rawValue,
                                       timeBase: encoding.timeBase, threads: threads)
        let depth = Int(av_pix_fmt_desc_get(format)?.pointee.comp.0.depth ?? 8)
        series = QualitySeries(timeBase: encoding.timeBase, peak: (1 << depth) - 1)
    }

    /// Keeps `picture`, which the encoder is about to code with presentation time `pts` (its time base).
    func reference(_ picture: Frame, pts: Int64) throws(MediaError) {
        guard let clone = av_frame_clone(picture.pointer) else { throw MediaError(.internalError, "out of memory") }
        let kept = Frame(owning: clone)
        kept.pts = pts
        references[pts] = kept
    }

    /// Decodes one of the encoder's packets (one that is written) and scores what comes out.
    func measure(_ packet: Packet) throws(MediaError) {
        try decoder.decode(packet, into: decoded, while: { true }) { frame throws(MediaError) in try score(frame) }
    }

    /// Drains the decoder and the filters; the figures of every picture written, in presentation order.
    func finish() throws(MediaError) -> QualitySeries {
        guard !finished else { return series }
        finished = true
        try decoder.decode(nil, into: decoded, while: { true }) { frame throws(MediaError) in try score(frame) }
        for score in try graph.finish() { add(score) }
        if !references.isEmpty {
            throw MediaError(.internalError, "\(references.count) pictures given to the \(decoder.role) never came back "
                             + "from it; their quality cannot be measured")
        }
        return series
    }

    private func score(_ frame: Frame) throws(MediaError) {
        let pts = frame.bestEffortTimestamp
        guard let reference = references.removeValue(forKey: pts) else {
            throw MediaError(.internalError, "the \(decoder.role) returned a picture at \(pts) that was never encoded")
        }
        for score in try graph.push(distorted: frame, reference: reference, pts: pts) { add(score) }
    }

    private func add(_ score: QualityFilterGraph.Score) {
        series.append(pts: score.pts, mseY: score.mseY, mse: score.mse, ssimY: score.ssimY, ssim: score.ssim)
    }
}
