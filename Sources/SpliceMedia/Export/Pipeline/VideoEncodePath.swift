internal import CFFmpeg

/// Decode → convert → encode for the video track. Writes exactly the frames presented inside the
/// window, with their source presentation times (shifted to the output's zero), or on a constant
/// grid when a frame rate is set.
final class VideoEncodePath: TrackPath {
    let streamIndex: Int
    private let decoder: CodecContext
    private let encoder: CodecContext
    private let converter: VideoConverter
    private let sink: StreamSink
    private let inputTimeBase: Rational
    private let encoderTimeBase: AVRational
    private let window: ExportPlan.Window
    /// Frames presented from here on are encoded; those before ``window`` only warm the rate control.
    private let encodeStart: MediaTime
    /// Output pts of the window's first frame once it has been seen (with a warm-up: the forced IDR;
    /// packets before it are dropped).
    private var keepFrom: Int64?
    private let origin: MediaTime
    private let outputZero: MediaTime
    private let constantRate: Rational?
    private let decoded = Frame()
    private let packet = Packet()
    private var lastPts = Int64.min
    /// Constant-rate state: the picture waiting for its slots, and the next slot to fill.
    private var held: Frame?
    private var nextSlot: Int64 = 0
    private var decoderDrained = false

    private(set) var isDone = false
    private(set) var framesWritten = 0
    /// Bytes of the packets written, and the encoder's QP summed over them (where it reports one).
    private(set) var bytesWritten: Int64 = 0
    private var qpSum: Int64 = 0
    private var qpCount = 0
    /// Output pts (encoder time base) of every frame written, in order.
    private(set) var writtenTimestamps: [Int64] = []
    private(set) var outputTime = MediaTime.zero
    /// The output stream this path writes.
    var outputIndex: Int { sink.index }

    init(plan: ExportPlan, encoding: VideoEncoding, demuxer: Demuxer, streamIndex: Int, writer: any PacketWriter,
         extraOptions: [String: String]) throws(MediaError) {
        let stream = demuxer.stream(streamIndex)
        self.streamIndex = streamIndex
        decoder = try CodecContext.decoder(for: stream, location: plan.location, threads: plan.codecThreads)
        encoder = try CodecContext.encoder(named: encoding.encoderName)
        converter = VideoConverter(encoding: encoding)
        inputTimeBase = Rational(stream.pointee.time_base)
        encoderTimeBase = encoding.timeBase.av
        window = plan.videoWindow
        encodeStart = plan.videoWindow.start - plan.videoWarmUp
        origin = plan.origin
        outputZero = plan.outputZero
        constantRate = encoding.constantFrameRate

        let ctx = encoder.pointer
        ctx.pointee.width = Int32(encoding.width)
        ctx.pointee.height = Int32(encoding.height)
        ctx.pointee.pix_fmt = av_get_pix_fmt(encoding.pixelFormat)
        ctx.pointee.time_base = encoding.timeBase.av
        if let rate = encoding.nominalFrameRate { ctx.pointee.framerate = rate.av }
        ctx.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        ctx.pointee.gop_size = Int32(encoding.keyframeInterval)
        if let b = encoding.bitrate { ctx.pointee.bit_rate = Int64(b) }
        if let m = encoding.maxBitrate { ctx.pointee.rc_max_rate = Int64(m) }
        if let s = encoding.bufferSize { ctx.pointee.rc_buffer_size = Int32(s) }
        if let l = encoding.level { ctx.pointee.level = Int32(l) }
        if let p = encoding.profileNumber { ctx.pointee.profile = Int32(p) }
        ctx.pointee.thread_count = Int32(plan.codecThreads)
        if let p = encoding.colorPrimaries { ctx.pointee.color_primaries = AVColorPrimaries(UInt32(p)) }
        if let t = encoding.colorTransfer { ctx.pointee.color_trc = AVColorTransferCharacteristic(UInt32(t)) }
        if let c = encoding.colorSpace { ctx.pointee.colorspace = AVColorSpace(UInt32(c)) }
        ctx.pointee.color_range = AVCOL_RANGE_MPEG
        if writer.wantsGlobalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try encoder.open(options: encoding.options.merging(extraOptions) { _, extra in extra })
        sink = StreamSink(writer: writer, index: try writer.addStream(encoder: encoder, frameRate: encoding.nominalFrameRate))
    }

    func handle(_ packet: Packet) throws(MediaError) {
        guard !isDone else { return }
        try decoder.decode(packet, into: decoded, while: { true }) { frame throws(MediaError) in try accept(frame) }
    }

    func endOfInput() throws(MediaError) {
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
            isDone = true
            return
        }
        let picture = try converter.convert(frame)
        outputTime = t - outputZero
        let relative = t - outputZero
        let warmingUp = t < window.start
        if constantRate != nil {
            let slot = relative.value(in: Rational(encoderTimeBase), rounding: .nearest)
            if !warmingUp && keepFrom == nil { keepFrom = max(slot, nextSlot) }
            if let held {
                try emitHeld(held, upTo: slot)
            }
            guard let clone = av_frame_clone(picture.pointer) else { throw MediaError(.internalError, "out of memory") }
            let next = Frame(owning: clone)
            held = next
            nextSlot = max(nextSlot, slot)
            return
        }
        var pts = relative.value(in: Rational(encoderTimeBase), rounding: .nearest)
        if pts <= lastPts { pts = lastPts + 1 }
        lastPts = pts
        if !warmingUp && keepFrom == nil { keepFrom = pts }
        try encode(picture, pts: pts)
    }

    private func emitHeld(_ frame: Frame, upTo slot: Int64) throws(MediaError) {
        while nextSlot < slot {
            try encode(frame, pts: nextSlot)
            nextSlot += 1
        }
    }

    /// Whether output pts `pts` belongs to the warm-up (encoded, not written).
    private func isWarmUp(_ pts: Int64) -> Bool {
        guard encodeStart < window.start else { return false }
        guard let keepFrom else { return true }
        return pts < keepFrom
    }

    private func encode(_ frame: Frame, pts: Int64) throws(MediaError) {
        frame.pts = pts
        // After a warm-up the window's first frame starts a closed GOP of its own (an IDR: the
        // encoders are opened with forced-idr).
        let forcesKeyframe = encodeStart < window.start && pts == keepFrom
        frame.pointer.pointee.pict_type = forcesKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        frame.pointer.pointee.key_frame = 0
        while try !encoder.send(frame: frame) {
            try drainEncoder()
        }
        if !isWarmUp(pts) {
            framesWritten += 1
            writtenTimestamps.append(pts)
        }
        try drainEncoder()
    }

    private func drainEncoder() throws(MediaError) {
        while try encoder.receive(packet: packet) == .ready {
            try write(packet)
        }
    }

    private func write(_ packet: Packet) throws(MediaError) {
        if isWarmUp(packet.pts) { return }
        bytesWritten += Int64(packet.size)
        if let qp = packet.encoderQP {
            qpSum += Int64(qp)
            qpCount += 1
        }
        try sink.write(packet, timeBase: encoderTimeBase)
    }

    /// The mean of the encoder's frame QPs over the frames written (x264, x265), nil when it
    /// reports none.
    var meanQP: Double? { qpCount > 0 ? Double(qpSum) / Double(qpCount) : nil }

    func finish(checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {
        if let held {
            let endSlot = window.end.map { ($0 - outputZero).value(in: Rational(encoderTimeBase), rounding: .nearest) }
            try emitHeld(held, upTo: max(endSlot ?? (nextSlot + 1), nextSlot + 1))
            self.held = nil
        }
        _ = try encoder.send(frame: nil)
        while try encoder.receive(packet: packet) == .ready {
            try write(packet)
            try checkCancelled()
        }
    }
}
