internal import CFFmpeg

/// Decode → convert → encode for the video track. Writes exactly the frames presented inside the
/// window, with their source presentation times (shifted to the output's zero), or on a constant
/// grid when a frame rate is set. One decoder feeds every ``VideoRendition``: one for an ordinary
/// export, one per rung of a streaming ladder (``ExportPlan/ladder``).
final class VideoEncodePath: TrackPath {
    let streamIndex: Int
    private let decoder: CodecContext
    private let renditions: [VideoRendition]
    /// One encoder thread per rendition when there are several and the writer is shared safely
    /// (``encodesSideBySide``); empty: the decoding thread encodes every rendition itself.
    private let threads: [RenditionThread]
    /// For each rendition, the earlier rendition whose converted picture it scales from (nil: the
    /// decoded picture); see ``pictureSources(_:)``.
    private let sources: [Int?]
    /// The current frame's converted picture per rendition, while it is handed down the ladder.
    private var pictures: [Frame?]
    private let inputTimeBase: Rational
    /// The window; its end moves forward when the transcoder hands the rest of the segment to
    /// another lane (``SegmentEnd``).
    private var window: ExportPlan.Window
    private let movableEnd: SegmentEnd?
    /// Pictures presented from here on are encoded; those before ``window`` only warm the rate control.
    private let encodeStart: MediaTime
    private let origin: MediaTime
    private let outputZero: MediaTime
    private let decoded = Frame()
    private var decoderDrained = false
    /// A quality target's probe chunks (one rendition per probe CRF), and the chunk being encoded.
    private let probeChunks: [ExportPlan.Window]
    private var probeChunk = -1

    private(set) var isDone = false
    private(set) var outputTime = MediaTime.zero
    /// Frames written (every rendition writes the same frames).
    var framesWritten: Int { renditions[0].framesWritten }
    /// Output pts (encoder time base) of every frame written, in order.
    var writtenTimestamps: [Int64] { renditions[0].writtenTimestamps }
    /// Bytes of the first rendition's packets.
    var bytesWritten: Int64 { renditions[0].bytesWritten }
    /// The mean QP of the first rendition's pictures, where the encoder reports one.
    var meanQP: Double? { renditions[0].meanQP }
    /// The first rendition's quality against the pictures it encoded, when the plan measures it.
    var quality: QualitySeries? { renditions[0].quality }
    /// The output stream of the first rendition.
    var outputIndex: Int { renditions[0].outputIndex }

    /// `sideBySide`: encode each rendition on a thread of its own when there are several; the
    /// writer must then take packets from any thread (``SerializedPacketWriter``).
    init(plan: ExportPlan, encoding: VideoEncoding, demuxer: Demuxer, streamIndex: Int, writer: any PacketWriter,
         extraOptions: [String: String], sideBySide: Bool = false) throws(MediaError) {
        let stream = demuxer.stream(streamIndex)
        self.streamIndex = streamIndex
        decoder = try CodecContext.decoder(for: stream, location: plan.location, threads: plan.codecThreads)
        var renditions: [VideoRendition] = []
        if let probe = plan.probe {
            // The probes keep the source's timing: a constant frame rate would fill the gaps
            // between chunks with repeated pictures.
            var probing = encoding
            probing.constantFrameRate = nil
            for crf in probe.crfs {
                renditions.append(try VideoRendition(
                    encoding: probing, writer: writer, codecThreads: plan.codecThreads,
                    extraOptions: extraOptions.merging(["crf": TargetQualityEncode.crfOption(crf)]) { _, probe in probe },
                    keyframeGrid: nil, warmsUp: false, measuresQuality: true))
            }
            probeChunks = probe.chunks
            sources = renditions.map { _ in nil }
        } else {
            probeChunks = []
            sources = Self.pictureSources([encoding] + plan.ladder)
        }
        let rungs = plan.probe == nil ? [encoding] + plan.ladder : []
        for (rung, source) in zip(rungs, sources) {
            renditions.append(try VideoRendition(encoding: rung, writer: writer, codecThreads: plan.codecThreads,
                                                 extraOptions: extraOptions, keyframeGrid: plan.keyframeGrid,
                                                 warmsUp: plan.videoWarmUp > .zero, fromLargerRung: source != nil,
                                                 measuresQuality: plan.measuresQuality && renditions.isEmpty))
        }
        self.renditions = renditions
        threads = !sideBySide || renditions.count < 2 ? [] : renditions.enumerated().map { i, rendition in
            RenditionThread(rendition: rendition, name: "splice-rung-\(i)", tally: plan.helperCPU)
        }
        pictures = Array(repeating: nil, count: renditions.count)
        inputTimeBase = Rational(stream.pointee.time_base)
        window = plan.videoWindow
        movableEnd = plan.movableEnd
        encodeStart = plan.videoWindow.start - plan.videoWarmUp
        origin = plan.origin
        outputZero = plan.outputZero
    }

    func handle(_ packet: Packet) throws(MediaError) {
        guard !isDone else { return }
        try decoder.decode(packet, into: decoded, while: { true }) { frame throws(MediaError) in try accept(frame) }
    }

    func endOfInput() throws(MediaError) {
        defer { movableEnd?.close() }
        guard !isDone, !decoderDrained else { return }
        decoderDrained = true
        try decoder.decode(nil, into: decoded, while: { true }) { frame throws(MediaError) in try accept(frame) }
    }

    private func accept(_ frame: Frame) throws(MediaError) {
        guard !isDone else { return }
        let ts = frame.bestEffortTimestamp
        guard ts != FFmpeg.noPTS else { return }
        let t = MediaTime(value: ts, timeBase: inputTimeBase) - origin
        if t < encodeStart { return }
        if let end = window.end, t >= end {
            movableEnd?.close()
            isDone = true
            return
        }
        if let movableEnd, t >= window.start, !movableEnd.admits(t) {
            window.end = movableEnd.end
            isDone = true
            return
        }
        var startsChunk = false
        if !probeChunks.isEmpty {
            // Probes: only the chunks' pictures, each chunk opening with an IDR picture.
            guard let chunk = probeChunks.firstIndex(where: { $0.contains(t) }) else {
                if let last = probeChunks.last?.end, t >= last { isDone = true }
                return
            }
            startsChunk = chunk != probeChunk
            probeChunk = chunk
        }
        outputTime = t - outputZero
        for (i, rendition) in renditions.enumerated() {
            let input = sources[i].flatMap { pictures[$0] } ?? frame
            let picture = try rendition.convert(input)
            pictures[i] = picture
            if threads.isEmpty {
                try rendition.encode(picture, at: t - outputZero, warmingUp: t < window.start, startsChunk: startsChunk)
            } else {
                try threads[i].submit(picture, at: t - outputZero, warmingUp: t < window.start, startsChunk: startsChunk)
            }
        }
        movableEnd?.encoded(renditions[0].packetsWritten)
    }

    /// Each rendition's bytes and measured quality (a probe run's outcome per CRF).
    var renditionOutcomes: [(bytes: Int64, quality: QualitySeries?)] {
        renditions.map { ($0.bytesWritten, $0.quality) }
    }

    /// Which picture each rung scales from. Scaling from the full-size decoded picture is a
    /// visible share of a ladder's work (from 1080p, 1.9 ms a frame whatever the rung's size;
    /// from 720p, 0.9 ms), so a rung scales instead from the smallest earlier rung that can stand
    /// in (``VideoEncoding/canFeed(_:)``: at least twice its size) and was itself scaled from the
    /// decoded picture: no picture is more than two scalings from the source (docs/media.md).
    static func pictureSources(_ rungs: [VideoEncoding]) -> [Int?] {
        var sources: [Int?] = []
        for (i, rung) in rungs.enumerated() {
            let candidates = rungs.indices.prefix(i).filter { sources[$0] == nil && rungs[$0].canFeed(rung) }
            sources.append(candidates.min { rungs[$0].width * rungs[$0].height < rungs[$1].width * rungs[$1].height })
        }
        return sources
    }

    func finish(checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {
        movableEnd?.close()
        func endSlot(_ rendition: VideoRendition) -> Int64? {
            window.end.map { ($0 - outputZero).value(in: Rational(rendition.encoderTimeBase), rounding: .nearest) }
        }
        guard !threads.isEmpty else {
            for rendition in renditions { try rendition.finish(endSlot: endSlot(rendition), checkCancelled: checkCancelled) }
            return
        }
        // Every thread flushes its encoder at once; then wait for each.
        for thread in threads { thread.finish(endSlot: endSlot(thread.rendition)) }
        for thread in threads { try thread.waitForExit(checkCancelled: checkCancelled) }
    }

    deinit {
        // A failed or cancelled run: the threads stop without finishing (no-op once they have).
        for thread in threads { thread.stop() }
    }
}
