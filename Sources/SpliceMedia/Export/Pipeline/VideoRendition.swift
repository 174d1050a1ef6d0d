internal import CFFmpeg
import Synchronization

/// One encoded picture stream fed by a shared decoder: convert (scale, pad, rotate) → encode →
/// write. ``VideoEncodePath`` drives one for an ordinary export and one per rung of a streaming
/// ladder (one decode feeds every rung). Writes frames with their output presentation times, or
/// on a constant grid when a frame rate is set; with a keyframe grid, the first frame at or after
/// every multiple of it is forced to be an IDR picture (streaming segments start there). With a
/// warm-up (``RateControl``), the pictures before the window are encoded only to warm the rate
/// control: their packets are dropped and the window's first picture is a forced IDR.
final class VideoRendition {
    private let encoder: CodecContext
    private let converter: VideoConverter
    private let sink: StreamSink
    let encoderTimeBase: AVRational
    private let constantRate: Rational?
    /// Forced keyframes at every multiple of this (output time), when set.
    private let keyframeGrid: MediaTime?
    private var nextForcedKeyframe: MediaTime?
    private let packet = Packet()
    private var lastPts = Int64.min
    /// Constant-rate state: the picture waiting for its slots, and the next slot to fill.
    private var held: Frame?
    private var nextSlot: Int64 = 0
    /// Whether pictures before the window are encoded to warm the rate control up.
    private let warmsUp: Bool
    /// Output pts of the window's first picture once it has been seen (with a warm-up: the forced
    /// IDR; packets before it are dropped).
    private var keepFrom: Int64?
    /// The next picture encoded is forced to be an IDR picture (a probe chunk starts), and
    /// whether the held constant-rate picture starts one.
    private var forcesNext = false
    private var heldStartsChunk = false

    private(set) var framesWritten = 0
    /// Packets the encoder has given back (pictures encoded, the warm-up's left out).
    var packetsWritten: Int { packetCount.load(ordering: .relaxed) }
    /// ``packetsWritten``, readable from the decoding thread while a ``RenditionThread`` encodes.
    private let packetCount = Atomic<Int>(0)
    /// Bytes of the packets written, and the encoder's QP summed over them (where it reports one).
    private(set) var bytesWritten: Int64 = 0
    private var qpSum: Int64 = 0
    private var qpCount = 0
    /// Output pts (encoder time base) of every frame written, in order.
    private(set) var writtenTimestamps: [Int64] = []
    /// The output stream this rendition writes.
    var outputIndex: Int { sink.index }
    /// Measures the written pictures against the pictures encoded, when asked (``QualityMeter``).
    private let meter: QualityMeter?
    /// Their figures, once ``finish(endSlot:checkCancelled:)`` has run.
    private(set) var quality: QualitySeries?

    /// `fromLargerRung`: the pictures it is given are another rung's converted pictures (an encoding
    /// that ``VideoEncoding/canFeed(_:)`` this one), not decoded ones, so it only scales them.
    init(encoding: VideoEncoding, writer: any PacketWriter, codecThreads: Int, extraOptions: [String: String],
         keyframeGrid: MediaTime?, warmsUp: Bool, fromLargerRung: Bool = false,
         measuresQuality: Bool = false) throws(MediaError) {
        encoder = try CodecContext.encoder(named: encoding.encoderName)
        converter = VideoConverter(encoding: fromLargerRung ? encoding.fromLargerPicture : encoding)
        encoderTimeBase = encoding.timeBase.av
        constantRate = encoding.constantFrameRate
        self.keyframeGrid = keyframeGrid
        self.warmsUp = warmsUp

        let ctx = encoder.pointer
        ctx.pointee.width = Int32(encoding.width)
        ctx.pointee.height = Int32(encoding.height)
        ctx.pointee.pix_fmt = av_get_pix_fmt(encoding.pixelFormat)
        ctx.pointee.time_base = encoding.timeBase.av
        if let rate = encoding.nominalFrameRate { ctx.pointee.framerate = rate.av }
        ctx.pointee.sample_aspect_ratio = encoding.sampleAspectRatio.av
        ctx.pointee.gop_size = Int32(encoding.keyframeInterval)
        if let b = encoding.bitrate { ctx.pointee.bit_rate = Int64(b) }
        if let m = encoding.maxBitrate { ctx.pointee.rc_max_rate = Int64(m) }
        if let s = encoding.bufferSize { ctx.pointee.rc_buffer_size = Int32(s) }
        if let l = encoding.level { ctx.pointee.level = Int32(l) }
        if let p = encoding.profileNumber { ctx.pointee.profile = Int32(p) }
        ctx.pointee.thread_count = Int32(codecThreads)
        if let p = encoding.colorPrimaries { ctx.pointee.color_primaries = AVColorPrimaries(UInt32(p)) }
        if let t = encoding.colorTransfer { ctx.pointee.color_trc = AVColorTransferCharacteristic(UInt32(t)) }
        if let c = encoding.colorSpace { ctx.pointee.colorspace = AVColorSpace(UInt32(c)) }
        ctx.pointee.color_range = AVCOL_RANGE_MPEG
        if writer.wantsGlobalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try encoder.open(options: encoding.options.merging(extraOptions) { _, extra in extra })
        meter = measuresQuality ? try QualityMeter(encoder: encoder, encoding: encoding, threads: codecThreads) : nil
        sink = StreamSink(writer: writer, index: try writer.addStream(encoder: encoder, frameRate: encoding.nominalFrameRate))
    }

    /// The encoder-ready picture for one decoded picture (valid until the next call; smaller rungs
    /// may scale from it). Kept apart from ``encode(_:at:warmingUp:startsChunk:)`` so that a ladder
    /// converts on the decoding thread and encodes each rung on a thread of its own
    /// (``RenditionThread``).
    func convert(_ frame: Frame) throws(MediaError) -> Frame {
        try converter.convert(frame)
    }

    /// Encodes one converted picture presented at `relative` (output time); `warmingUp` when it
    /// lies before the window and only warms the rate control. `startsChunk`: the picture opens a
    /// quality probe's chunk and is coded as an IDR picture. Sets the picture's pts and type.
    func encode(_ picture: Frame, at relative: MediaTime, warmingUp: Bool, startsChunk: Bool = false) throws(MediaError) {
        if constantRate != nil {
            let slot = relative.value(in: Rational(encoderTimeBase), rounding: .nearest)
            if !warmingUp && keepFrom == nil { keepFrom = max(slot, nextSlot) }
            if let held {
                try emitHeld(held, upTo: slot)
            }
            guard let clone = av_frame_clone(picture.pointer) else { throw MediaError(.internalError, "out of memory") }
            held = Frame(owning: clone)
            heldStartsChunk = startsChunk
            nextSlot = max(nextSlot, slot)
            return
        }
        var pts = relative.value(in: Rational(encoderTimeBase), rounding: .nearest)
        if pts <= lastPts { pts = lastPts + 1 }
        lastPts = pts
        if !warmingUp && keepFrom == nil { keepFrom = pts }
        forcesNext = startsChunk
        try encode(picture, pts: pts)
    }

    private func emitHeld(_ frame: Frame, upTo slot: Int64) throws(MediaError) {
        while nextSlot < slot {
            forcesNext = heldStartsChunk
            heldStartsChunk = false
            try encode(frame, pts: nextSlot)
            nextSlot += 1
        }
    }

    private func encode(_ frame: Frame, pts: Int64) throws(MediaError) {
        frame.pts = pts
        // After a warm-up the window's first picture starts a closed GOP of its own (an IDR: the
        // encoders are opened with forced-idr).
        let startsWindow = warmsUp && pts == keepFrom
        let forced = forcesKeyframe(at: pts) || startsWindow || forcesNext
        forcesNext = false
        frame.pointer.pointee.pict_type = forced ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        frame.pointer.pointee.key_frame = 0
        if !isWarmUp(pts) { try meter?.reference(frame, pts: pts) }
        while try !encoder.send(frame: frame) {
            try drainEncoder()
        }
        if !isWarmUp(pts) {
            framesWritten += 1
            writtenTimestamps.append(pts)
        }
        try drainEncoder()
    }

    /// Whether output pts `pts` belongs to the warm-up (encoded, not written).
    private func isWarmUp(_ pts: Int64) -> Bool {
        guard warmsUp else { return false }
        guard let keepFrom else { return true }
        return pts < keepFrom
    }

    /// Whether the frame at `pts` is the first at or after the next multiple of the keyframe grid
    /// (the segment's own first frame is an IDR picture anyway).
    private func forcesKeyframe(at pts: Int64) -> Bool {
        guard let grid = keyframeGrid else { return false }
        let t = MediaTime(value: pts, timeBase: Rational(encoderTimeBase))
        guard let upcoming = nextForcedKeyframe else {
            nextForcedKeyframe = grid.nextMultiple(after: t)
            return false
        }
        guard t >= upcoming else { return false }
        nextForcedKeyframe = grid.nextMultiple(after: t)
        return true
    }

    private func drainEncoder() throws(MediaError) {
        while try encoder.receive(packet: packet) == .ready {
            try write(packet)
        }
    }

    private func write(_ packet: Packet) throws(MediaError) {
        if isWarmUp(packet.pts) { return }
        try meter?.measure(packet)
        bytesWritten += Int64(packet.size)
        packetCount.add(1, ordering: .relaxed)
        if let qp = packet.encoderQP {
            qpSum += Int64(qp)
            qpCount += 1
        }
        try sink.write(packet, timeBase: encoderTimeBase)
    }

    /// The mean of the encoder's picture QPs over the pictures written (x264, x265), nil when it
    /// reports none.
    var meanQP: Double? { qpCount > 0 ? Double(qpSum) / Double(qpCount) : nil }

    /// Emits a held constant-rate picture up to `endSlot` (encoder time base) and drains the encoder.
    func finish(endSlot: Int64?, checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {
        if let held {
            try emitHeld(held, upTo: max(endSlot ?? (nextSlot + 1), nextSlot + 1))
            self.held = nil
        }
        _ = try encoder.send(frame: nil)
        while try encoder.receive(packet: packet) == .ready {
            try write(packet)
            try checkCancelled()
        }
        quality = try meter?.finish()
    }
}

extension MediaTime {
    /// The smallest multiple of this (positive) duration strictly after `t`.
    func nextMultiple(after t: MediaTime) -> MediaTime {
        let steps = t.count(of: self, rounding: .down)
        var next = self * (steps + 1)
        if next <= t { next = self * (steps + 2) }
        return next
    }
}
