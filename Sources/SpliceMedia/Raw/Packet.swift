internal import CFFmpeg

/// Owns one `AVPacket` (allocated in init, freed in deinit). Confined to the thread that uses it.
final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    init() {
        guard let p = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    /// Drops the payload reference and resets fields, keeping the allocation.
    func unref() { av_packet_unref(pointer) }

    var streamIndex: Int32 {
        get { pointer.pointee.stream_index }
        set { pointer.pointee.stream_index = newValue }
    }
    var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }
    var dts: Int64 {
        get { pointer.pointee.dts }
        set { pointer.pointee.dts = newValue }
    }
    var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }
    var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    var isDiscard: Bool { pointer.pointee.flags & AV_PKT_FLAG_DISCARD != 0 }
    var size: Int { Int(pointer.pointee.size) }

    /// Samples the container asks the decoder to drop at the packet's start and end
    /// (`AV_PKT_DATA_SKIP_SAMPLES`: an MP4 edit list's or `iTunSMPB`'s priming, Opus pre-skip);
    /// zero when there is no such side data.
    var skipSamples: (start: Int64, end: Int64) {
        var size = 0
        guard let sd = av_packet_get_side_data(pointer, AV_PKT_DATA_SKIP_SAMPLES, &size), size >= 8 else { return (0, 0) }
        return (Int64(UInt32(littleEndianBytes: UnsafeBufferPointer(start: sd, count: 4))),
                Int64(UInt32(littleEndianBytes: UnsafeBufferPointer(start: sd + 4, count: 4))))
    }

    /// The frame QP an encoder reported in the packet's quality statistics (x264, x265:
    /// `AV_PKT_DATA_QUALITY_STATS`, quality = QP × FF_QP2LAMBDA), nil when there are none.
    var encoderQP: Int? {
        var size: Int = 0
        guard let data = av_packet_get_side_data(pointer, AV_PKT_DATA_QUALITY_STATS, &size), size >= 4 else { return nil }
        let quality = Int(data[0]) | Int(data[1]) << 8 | Int(data[2]) << 16 | Int(Int8(bitPattern: data[3])) << 24
        return (quality + 59) / 118
    }

    /// Moves the payload of `other` into this packet (other becomes blank).
    func take(from other: Packet) {
        av_packet_unref(pointer)
        av_packet_move_ref(pointer, other.pointer)
    }

    /// Rescales pts/dts/duration between time bases (FFmpeg's nearest rounding, one place).
    func rescale(from: AVRational, to: AVRational) {
        av_packet_rescale_ts(pointer, from, to)
    }
}

/// Owns one `AVFrame`. Confined to the thread that uses it.
final class Frame {
    let pointer: UnsafeMutablePointer<AVFrame>

    init() {
        guard let f = av_frame_alloc() else { fatalError("av_frame_alloc: out of memory") }
        pointer = f
    }

    /// Takes ownership of a frame FFmpeg allocated (e.g. by `av_frame_clone`).
    init(owning pointer: UnsafeMutablePointer<AVFrame>) {
        self.pointer = pointer
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&f)
    }

    func unref() { av_frame_unref(pointer) }

    /// The frame's presentation time: the decoder's best estimate when pts is missing.
    var bestEffortTimestamp: Int64 {
        let be = pointer.pointee.best_effort_timestamp
        return be != FFmpeg.noPTS ? be : pointer.pointee.pts
    }
    var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }
    var sampleCount: Int32 { pointer.pointee.nb_samples }
}
