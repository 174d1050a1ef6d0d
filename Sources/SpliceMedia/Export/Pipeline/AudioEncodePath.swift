internal import CFFmpeg

/// Decode → resample/remix → encode for one audio track, placed by samples (``AudioTimeline``).
///
/// Every packet handed to the decoder is placed by the rule, starting at the placement's anchor
/// (or the track's first packet); a decoded frame takes the position of the packet it came from,
/// found by its timestamp. Packets before the anchor only warm the decoder up. Positions are
/// source samples from the track's first; output sample `y` is source position
/// `firstSample + y·in/out`. Resampling starts at a point where the input and output sample grids
/// coincide (a multiple of `out / gcd(in, out)` output samples), so two runs that overlap produce
/// the same samples in the overlap — what lets independently encoded segments join without a
/// phase step. Output samples before `encodeStart` are produced and dropped.
final class AudioEncodePath: TrackPath {
    let streamIndex: Int
    private let decoder: CodecContext
    private let encoder: CodecContext
    private let sink: StreamSink
    private let inputTimeBase: Rational
    private let origin: MediaTime
    private let outputZero: MediaTime
    private let placement: AudioPlacement
    private let outputRate: Int
    private let inputRate: Int
    private let outputLayout: ChannelLayout
    private let fifo: AudioFifo
    private let frameSize: Int
    private let sizer: AudioPacketSizer
    private let encoderFrame = Frame()
    private let decoded = Frame()
    private let packet = Packet()

    // Placing packets.
    private var walker: AudioTimelineWalker
    private var placing = false
    /// Nominal position of the track's first sample, once known (unanchored runs).
    private var trackOrigin: Int64?
    /// Packets handed to the decoder since placing began: timestamp and position (from the
    /// track's first sample), oldest first; trimmed as frames come out.
    private var pending: [(stamp: Int64, position: Int64)] = []
    private var lastFrameEnd: Int64?
    private var lead: Int64?

    private var resampler: Resampler?
    private var resamplerInput: (format: Int32, rate: Int32, channels: Int32)?
    /// Source position where feeding the resampler begins, and where it may stop.
    private let sourceStart: Int64
    private let sourceLimit: Int64?
    /// Next source position to feed.
    private var cursor: Int64
    /// Output position of the first sample in the FIFO.
    private var fifoStart: Int64
    private var resamplerFlushed = false

    private(set) var isDone = false
    private(set) var samplesEncoded: Int64 = 0
    private(set) var outputTime = MediaTime.zero

    init(plan: ExportPlan, encoding: AudioEncoding, placement: AudioPlacement, demuxer: Demuxer, streamIndex: Int,
         writer: any PacketWriter) throws(MediaError) {
        let stream = demuxer.stream(streamIndex)
        self.streamIndex = streamIndex
        self.placement = placement
        decoder = try CodecContext.decoder(for: stream, location: plan.location, threads: plan.codecThreads)
        encoder = try CodecContext.encoder(named: encoding.encoderName)
        inputTimeBase = Rational(stream.pointee.time_base)
        origin = plan.origin
        outputZero = plan.outputZero
        outputRate = encoding.sampleRate
        inputRate = Int(max(1, stream.pointee.codecpar.pointee.sample_rate))
        sizer = AudioPacketSizer(stream: stream)
        if let anchor = placement.anchor {
            walker = AudioTimelineWalker(timeBase: inputTimeBase, sampleRate: inputRate, anchor: anchor)
        } else {
            walker = AudioTimelineWalker(timeBase: inputTimeBase, sampleRate: inputRate)
            placing = true
        }
        lead = placement.lead
        guard let layout = ChannelLayout(name: encoding.channelLayout) else {
            throw MediaError(.invalidSettings, "unknown channel layout '\(encoding.channelLayout)'")
        }
        outputLayout = layout

        // Where feeding starts and stops, aligned so overlapping runs resample identically.
        let g = MediaTime.gcd(Int64(inputRate), Int64(outputRate))
        let periodOut = Int64(outputRate) / g, periodIn = Int64(inputRate) / g
        let alignedStart = floorDiv(placement.encodeStart, periodOut) * periodOut
        sourceStart = placement.firstSample + alignedStart / periodOut * periodIn
        fifoStart = alignedStart
        cursor = sourceStart
        sourceLimit = placement.sourceLimit(inputRate: inputRate, outputRate: outputRate)

        let ctx = encoder.pointer
        ctx.pointee.sample_fmt = AudioEncodePath.preferredFormat(encoder.codec)
        ctx.pointee.sample_rate = Int32(encoding.sampleRate)
        _ = av_channel_layout_copy(&ctx.pointee.ch_layout, &layout.layout)
        if let b = encoding.bitrate { ctx.pointee.bit_rate = Int64(b) }
        ctx.pointee.time_base = AVRational(num: 1, den: Int32(encoding.sampleRate))
        ctx.pointee.thread_count = Int32(plan.codecThreads)
        if writer.wantsGlobalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try encoder.open(options: [:])
        frameSize = ctx.pointee.frame_size > 0 ? Int(ctx.pointee.frame_size) : 1024
        fifo = AudioFifo(format: ctx.pointee.sample_fmt, channels: layout.channelCount)

        encoderFrame.pointer.pointee.format = ctx.pointee.sample_fmt.rawValue
        _ = av_channel_layout_copy(&encoderFrame.pointer.pointee.ch_layout, &layout.layout)
        encoderFrame.pointer.pointee.sample_rate = Int32(encoding.sampleRate)
        encoderFrame.pointer.pointee.nb_samples = Int32(frameSize)
        let ret = av_frame_get_buffer(encoderFrame.pointer, 0)
        if ret < 0 { throw FFmpeg.error(.internalError, "cannot allocate audio buffers", ret) }
        sink = StreamSink(writer: writer, index: try writer.addStream(encoder: encoder, frameRate: nil))
    }

    /// Encoder priming in samples (FFmpeg's `initial_padding`: 1024 for aac, 312 for libopus).
    var priming: Int { Int(encoder.pointer.pointee.initial_padding) }
    /// Samples per encoded packet.
    var samplesPerPacket: Int { frameSize }

    private static func preferredFormat(_ codec: UnsafePointer<AVCodec>) -> AVSampleFormat {
        guard var p = codec.pointee.sample_fmts else { return AV_SAMPLE_FMT_FLTP }
        let first = p.pointee
        while p.pointee != AV_SAMPLE_FMT_NONE {
            if p.pointee == AV_SAMPLE_FMT_FLTP || p.pointee == AV_SAMPLE_FMT_FLT { return p.pointee }
            p += 1
        }
        return first
    }

    func handle(_ packet: Packet) throws(MediaError) {
        guard !isDone else { return }
        place(packet)
        try decoder.decode(packet, into: decoded, while: { !isDone }) { frame throws(MediaError) in try accept(frame) }
    }

    func endOfInput() throws(MediaError) {
        guard !isDone else { return }
        try decoder.decode(nil, into: decoded, while: { !isDone }) { frame throws(MediaError) in try accept(frame) }
        try flushResampler()
        isDone = true
    }

    // MARK: - Positions

    /// Applies the rule to a packet about to be decoded.
    private func place(_ packet: Packet) {
        if !placing {
            guard let anchor = placement.anchor else { return }
            let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
            guard stamp == anchor.stamp else {
                sizer.skip(packet)  // decoder warm-up; keeps a Vorbis parser's state
                return
            }
            sizer.skip(packet)
            placing = true
            trackOrigin = 0
            pending.append((anchor.stamp, anchor.position))
            return
        }
        let info = sizer.info(packet)
        let nominal = walker.place(stamp: info.stamp, samples: info.samples)
        if trackOrigin == nil, info.outputSamples > 0 {
            trackOrigin = nominal + info.skipStart
            if lead == nil, let stamp = info.stamp {
                // The track's first sample, relative to output zero: audio that starts after the
                // video keeps that distance.
                let first = MediaTime(value: stamp, timeBase: inputTimeBase) + MediaTime(value: info.skipStart, timescale: Int32(inputRate))
                let distance = first - origin - outputZero
                lead = distance > .zero ? distance.count(of: MediaTime(value: 1, timescale: Int32(outputRate)), rounding: .nearest) : 0
            }
        }
        if let stamp = info.stamp { pending.append((stamp, nominal)) }
    }

    /// The position of a decoded frame: its packet's position plus whatever the decoder skipped
    /// at the packet's start (the frame's timestamp moved by as much).
    private func position(of frame: Frame) -> Int64? {
        guard let originNominal = trackOrigin else { return nil }
        let ts = frame.pts != FFmpeg.noPTS ? frame.pts : frame.bestEffortTimestamp
        guard ts != FFmpeg.noPTS, let k = pending.lastIndex(where: { $0.stamp <= ts }) else {
            return lastFrameEnd
        }
        let entry = pending[k]
        pending.removeFirst(k)
        let offset = MediaTime.rescale(ts - entry.stamp, multiplier: Int64(inputTimeBase.numerator) * Int64(inputRate),
                                       divisor: Int64(inputTimeBase.denominator))
        let base = placement.anchor == nil ? entry.position - originNominal : entry.position
        return base + offset
    }

    private func accept(_ frame: Frame) throws(MediaError) {
        guard placing, let position = position(of: frame) else { return }  // warm-up frames
        let count = Int64(frame.sampleCount)
        lastFrameEnd = position + count
        if try ensureResampler(for: frame) == false { return }
        let limit = sourceLimit ?? Int64.max
        if position > cursor && cursor < limit {
            // A real gap (the rule said so): silence, as every segment does.
            let gap = min(position, limit) - cursor
            try feedSilence(Int(gap), like: frame)
            cursor += gap
        }
        let skip = max(0, cursor - position)
        let take = min(position + count, limit) - max(cursor, position)
        if take > 0 {
            try feed(frame, skip: Int(skip), count: Int(take))
            cursor += take
        }
        if cursor >= limit {
            try flushResampler()
            isDone = true
        }
    }

    // MARK: - Resampling and encoding

    private func ensureResampler(for frame: Frame) throws(MediaError) -> Bool {
        let f = frame.pointer.pointee
        let key = (f.format, f.sample_rate, f.ch_layout.nb_channels)
        if let current = resamplerInput, current == key { return true }
        if resampler != nil {
            // The source changed format mid-stream; finish the old conversion and start anew.
            try flushResampler()
            resamplerFlushed = false
        }
        let inputLayout = ChannelLayout(copying: f.ch_layout)
        resampler = try Resampler(
            from: (inputLayout, AVSampleFormat(f.format), Int(f.sample_rate)),
            to: (outputLayout, encoder.pointer.pointee.sample_fmt, outputRate))
        resamplerInput = key
        return true
    }

    private func feed(_ frame: Frame, skip: Int, count: Int) throws(MediaError) {
        let f = frame.pointer.pointee
        let format = AVSampleFormat(f.format)
        let planar = av_sample_fmt_is_planar(format) != 0
        let channels = Int(f.ch_layout.nb_channels)
        let bytes = Int(av_get_bytes_per_sample(format))
        let planes = planar ? channels : 1
        let offset = skip * bytes * (planar ? 1 : channels)
        var pointers = [UnsafePointer<UInt8>?](repeating: nil, count: planes)
        for p in 0..<planes {
            pointers[p] = f.extended_data[p].map { UnsafePointer($0 + offset) }
        }
        _ = try pointers.withUnsafeMutableBufferPointer { buffer throws(MediaError) in
            try resampler!.convert(buffer.baseAddress, count: count, into: fifo)
        }
        try drainFifo(final: false)
    }

    private func feedSilence(_ count: Int, like frame: Frame) throws(MediaError) {
        let f = frame.pointer.pointee
        let format = AVSampleFormat(f.format)
        let channels = f.ch_layout.nb_channels
        let chunk = 4096
        let planes = av_sample_fmt_is_planar(format) != 0 ? Int(channels) : 1
        let data = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: planes)
        data.initialize(repeating: nil, count: planes)
        defer {
            av_freep(data)
            data.deallocate()
        }
        guard av_samples_alloc(data, nil, channels, Int32(chunk), format, 0) >= 0 else {
            throw MediaError(.internalError, "cannot allocate audio buffers (out of memory)")
        }
        av_samples_set_silence(data, 0, Int32(chunk), channels, format)
        var remaining = count
        while remaining > 0 {
            let n = min(chunk, remaining)
            _ = try data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: planes) { p throws(MediaError) in
                try resampler!.convert(p, count: n, into: fifo)
            }
            remaining -= n
            try drainFifo(final: false)
        }
    }

    private func flushResampler() throws(MediaError) {
        guard let resampler, !resamplerFlushed else { return }
        resamplerFlushed = true
        try resampler.convert(nil, count: 0, into: fifo)
        try drainFifo(final: false)
    }

    /// Drops what precedes `encodeStart`, then encodes whole frames (and, when `final`, the rest)
    /// up to `encodeEnd`.
    private func drainFifo(final: Bool) throws(MediaError) {
        if fifoStart < placement.encodeStart {
            let d = Int(min(Int64(fifo.count), placement.encodeStart - fifoStart))
            fifo.drain(d)
            fifoStart += Int64(d)
        }
        while true {
            var n = min(fifo.count, frameSize)
            if let end = placement.encodeEnd { n = Int(max(0, min(Int64(n), end - fifoStart))) }
            guard n == frameSize || (final && n > 0) else { break }
            try encode(count: n)
        }
    }

    private func encode(count: Int) throws(MediaError) {
        if av_frame_make_writable(encoderFrame.pointer) < 0 {
            throw MediaError(.internalError, "cannot get a writable audio buffer (out of memory)")
        }
        encoderFrame.pointer.pointee.nb_samples = Int32(count)
        let n = fifo.read(into: encoderFrame, count: count)
        let lead = self.lead ?? 0
        encoderFrame.pts = fifoStart + lead
        fifoStart += Int64(n)
        samplesEncoded += Int64(n)
        outputTime = MediaTime(value: fifoStart + lead, timescale: Int32(outputRate))
        while try !encoder.send(frame: encoderFrame) {
            try drainEncoder()
        }
        try drainEncoder()
    }

    private func drainEncoder() throws(MediaError) {
        let tb = AVRational(num: 1, den: Int32(outputRate))
        while try encoder.receive(packet: packet) == .ready {
            try sink.write(packet, timeBase: tb)
        }
    }

    func finish(checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {
        try flushResampler()
        try drainFifo(final: true)
        _ = try encoder.send(frame: nil)
        let tb = AVRational(num: 1, den: Int32(outputRate))
        while try encoder.receive(packet: packet) == .ready {
            try sink.write(packet, timeBase: tb)
            try checkCancelled()
        }
    }
}

/// Integer division rounding toward negative infinity.
func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}
