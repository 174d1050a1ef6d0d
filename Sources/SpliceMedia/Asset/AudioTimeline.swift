internal import CFFmpeg

// MARK: - The rule

/// Where an audio track's samples are, the way a single pass plays them.
///
/// **A track's audio position is its decoded sample count from the track's first sample.** A
/// decoder plays packets back to back whatever their timestamps say, and so does every single
/// pass of FFmpeg; phones and cameras write timestamps that wander (a second packet stamped 259
/// instead of 1024, steps of 1030 and 1032 for 1024-sample packets, Matroska's whole
/// milliseconds). Container timestamps are only used to find *real* discontinuities:
///
/// - For each packet after the first, the step from the previous packet's timestamp is compared
///   with the previous packet's sample count. When they differ by more than
///   ``AudioTimeline/discontinuityThreshold`` (100 ms, FFmpeg's `aresample` hard-compensation
///   default), the difference is real: a gap is filled with silence, an overlap drops the later
///   packet's first samples. Anything smaller is jitter and ignored — each step on its own, so
///   timestamps that drift by a few samples per packet never add up to a "gap".
/// - A packet's sample count is read from the packet, not decoded: the codec's fixed frame size
///   (AAC 1024, MP2/MP3 1152, AC-3 1536), the size of PCM, the TOC of an Opus packet, the block
///   flags of a Vorbis packet (whose first packet decodes to nothing), and only for other codecs
///   the container's packet duration. Samples a container asks to skip (MP4 edit lists, Opus
///   pre-skip: `AV_PKT_DATA_SKIP_SAMPLES`, discarded packets) are not positions.
///
/// The planner applies the rule to every packet of a track (``MediaScan``) and hands each segment
/// an ``AudioAnchor``: one packet's timestamp and position. A segment finds that packet again and
/// applies the same rule from there, so every segment places every sample exactly where a single
/// pass would, identically, without decoding what came before.
enum AudioTimeline {
    /// A timestamp step that differs from the sample count by more than this is a real gap or
    /// overlap (100 ms; in samples of the track's rate).
    static func discontinuityThreshold(sampleRate: Int) -> Int64 { Int64(max(1, sampleRate / 10)) }
}

/// One audio packet as the rule sees it.
struct AudioPacketInfo: Sendable, Hashable {
    /// pts (or dts) in the stream's time base; nil when the container gives neither.
    var stamp: Int64?
    /// Samples the packet decodes to before any skipping.
    var samples: Int64
    /// Samples the container asks the decoder to drop at the start and end of this packet.
    var skipStart: Int64
    var skipEnd: Int64
    /// The whole packet is dropped after decoding (`AV_PKT_FLAG_DISCARD`).
    var discard: Bool

    /// Samples the packet adds to the track.
    var outputSamples: Int64 { discard ? 0 : max(0, samples - skipStart - skipEnd) }
}

/// A packet the planner placed: where a segment starts applying the rule. Codable, three numbers.
public struct AudioAnchor: Sendable, Codable, Hashable {
    /// The packet's timestamp (pts, else dts) in the source stream's time base.
    public var stamp: Int64
    /// The packet's position: source samples from the track's first sample to the packet's first
    /// (undecoded-skip included) sample.
    public var position: Int64
    /// The packet's sample count (Vorbis packets' counts depend on the packet before).
    public var samples: Int64

    public init(stamp: Int64, position: Int64, samples: Int64) {
        self.stamp = stamp
        self.position = position
        self.samples = samples
    }
}

// MARK: - Packet sizes without decoding

/// Reads an audio packet's sample count and skips from the packet (see ``AudioTimeline``).
/// Owns a Vorbis parser when the codec is Vorbis (freed in deinit). Confined to one thread.
final class AudioPacketSizer {
    private let parameters: UnsafeMutablePointer<AVCodecParameters>
    private let codecID: AVCodecID
    private let sampleRate: Int64
    private let timeBase: Rational
    private var vorbis: OpaquePointer?
    /// Vorbis: the first packet of a stream decodes to nothing.
    private var first = true

    init(stream: UnsafeMutablePointer<AVStream>) {
        guard let par = avcodec_parameters_alloc() else { fatalError("out of memory") }
        _ = avcodec_parameters_copy(par, stream.pointee.codecpar)
        parameters = par
        codecID = par.pointee.codec_id
        sampleRate = Int64(max(1, par.pointee.sample_rate))
        timeBase = Rational(stream.pointee.time_base)
        if codecID == AV_CODEC_ID_VORBIS, let extradata = par.pointee.extradata {
            vorbis = av_vorbis_parse_init(extradata, par.pointee.extradata_size)
        }
    }

    deinit {
        if vorbis != nil { av_vorbis_parse_free(&vorbis) }
        var par: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&par)
    }

    /// The packet as the rule sees it.
    func info(_ packet: Packet) -> AudioPacketInfo {
        let p = packet.pointer.pointee
        let stamp = p.pts != FFmpeg.noPTS ? p.pts : (p.dts != FFmpeg.noPTS ? p.dts : nil)
        let skip = packet.skipSamples
        return AudioPacketInfo(stamp: stamp, samples: samples(packet), skipStart: skip.start, skipEnd: skip.end,
                               discard: p.flags & AV_PKT_FLAG_DISCARD != 0)
    }

    /// Feeds a packet whose count is already known (a segment's anchor) to the parsers, so the
    /// packets after it are sized as in a continuous pass.
    func skip(_ packet: Packet) {
        _ = samples(packet)
    }

    private func samples(_ packet: Packet) -> Int64 {
        let p = packet.pointer.pointee
        defer { first = false }
        if let vorbis, let data = p.data, p.size > 0 {
            let n = av_vorbis_parse_frame(vorbis, data, p.size)
            if n >= 0 { return first ? 0 : Int64(n) }
        }
        if codecID == AV_CODEC_ID_OPUS, let data = p.data, p.size > 0,
           let n = AudioPacketSizer.opusSamples(UnsafeBufferPointer(start: data, count: Int(p.size))) {
            // Opus always decodes at 48 kHz; a stream declared at another rate is resampled by FFmpeg's decoder.
            return sampleRate == 48000 ? n : MediaTime.rescale(n, multiplier: sampleRate, divisor: 48000)
        }
        let n = av_get_audio_frame_duration2(parameters, p.size)
        if n > 0 { return Int64(n) }
        if p.duration > 0 {
            return MediaTime(value: p.duration, timeBase: timeBase).count(of: MediaTime(value: 1, timescale: Int32(sampleRate)),
                                                                          rounding: .nearest)
        }
        return Int64(max(0, parameters.pointee.frame_size))
    }

    /// Samples (at 48 kHz) in an Opus packet, from its TOC byte (RFC 6716 §3.1).
    static func opusSamples(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard let toc = bytes.first else { return nil }
        let config = Int(toc >> 3)
        let frame: Int64
        switch config {
        case 0..<12: frame = [480, 960, 1920, 2880][config % 4]   // SILK 10/20/40/60 ms
        case 12..<16: frame = [480, 960][config % 2]              // hybrid 10/20 ms
        default: frame = [120, 240, 480, 960][config % 4]         // CELT 2.5/5/10/20 ms
        }
        let frames: Int64
        switch toc & 3 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard bytes.count >= 2 else { return nil }
            frames = Int64(bytes[1] & 0x3F)
        }
        return frame * frames
    }
}

// MARK: - Applying the rule

/// Applies the rule packet by packet. Positions here are *nominal*: where a packet's first
/// sample (before skips) falls, counted from wherever the walk started.
struct AudioTimelineWalker: Sendable {
    let timeBase: Rational
    let sampleRate: Int64
    let threshold: Int64
    private var previous: (stamp: Int64?, position: Int64, samples: Int64)?

    init(timeBase: Rational, sampleRate: Int) {
        self.timeBase = timeBase
        self.sampleRate = Int64(sampleRate)
        threshold = AudioTimeline.discontinuityThreshold(sampleRate: sampleRate)
    }

    /// Starts the walk at a known packet (a segment's anchor).
    init(timeBase: Rational, sampleRate: Int, anchor: AudioAnchor) {
        self.init(timeBase: timeBase, sampleRate: sampleRate)
        previous = (anchor.stamp, anchor.position, anchor.samples)
    }

    /// The nominal position of the next packet, which then becomes the previous one.
    mutating func place(stamp: Int64?, samples: Int64) -> Int64 {
        guard let last = previous else {
            previous = (stamp, 0, samples)
            return 0
        }
        var position = last.position + last.samples
        if let stamp, let lastStamp = last.stamp {
            let step = MediaTime.rescale(stamp - lastStamp, multiplier: Int64(timeBase.numerator) * sampleRate,
                                         divisor: Int64(timeBase.denominator))
            let deviation = step - last.samples
            if abs(deviation) > threshold { position += deviation }
        }
        previous = (stamp, position, samples)
        return position
    }
}

/// Every packet of one audio track placed by the rule: what the planner knows about a track.
/// Positions are relative to the track's first sample (position 0 is the first sample a single
/// pass plays).
struct AudioTrackTimeline: Sendable {
    let streamIndex: Int
    let timeBase: Rational
    let sampleRate: Int
    /// Per packet, in decode order.
    private(set) var stamps: [Int64] = []
    private(set) var positions: [Int64] = []
    private(set) var sampleCounts: [Int32] = []
    private(set) var outputStarts: [Int64] = []
    /// Samples each packet adds (0 for discarded packets).
    private(set) var outputCounts: [Int32] = []
    /// Samples in the track: the end of its last sample.
    private(set) var length: Int64 = 0
    private var walker: AudioTimelineWalker
    /// The nominal position of the first sample (set once a packet has output).
    private var firstSample: Int64?
    private var nominalPositions: [Int64] = []
    private var nominalOutputStarts: [Int64] = []
    private var nominalEnd: Int64 = 0
    private static let noStamp = Int64.min

    init(streamIndex: Int, timeBase: Rational, sampleRate: Int) {
        self.streamIndex = streamIndex
        self.timeBase = timeBase
        self.sampleRate = sampleRate
        walker = AudioTimelineWalker(timeBase: timeBase, sampleRate: sampleRate)
    }

    /// Adds the next packet (decode order).
    mutating func append(_ info: AudioPacketInfo) {
        let position = walker.place(stamp: info.stamp, samples: info.samples)
        let outputStart = position + (info.discard ? info.samples : info.skipStart)
        if info.outputSamples > 0 {
            if firstSample == nil { firstSample = outputStart }
            nominalEnd = max(nominalEnd, outputStart + info.outputSamples)
        }
        stamps.append(info.stamp ?? Self.noStamp)
        nominalPositions.append(position)
        nominalOutputStarts.append(outputStart)
        sampleCounts.append(Int32(clamping: info.samples))
        outputCounts.append(Int32(clamping: info.outputSamples))
    }

    /// Makes positions relative to the first sample; call once after the last packet.
    mutating func finish() {
        let origin = firstSample ?? 0
        positions = nominalPositions.map { $0 - origin }
        outputStarts = nominalOutputStarts.map { $0 - origin }
        length = max(0, nominalEnd - origin)
        nominalPositions = []
        nominalOutputStarts = []
    }

    var packetCount: Int { stamps.count }

    /// The container time of the track's first sample (nil for a track with no samples).
    var startTime: MediaTime? {
        guard let k = outputStarts.indices.first(where: { outputCounts[$0] > 0 && stamps[$0] != Self.noStamp }) else {
            return nil
        }
        return MediaTime(value: stamps[k], timeBase: timeBase) + samplesTime(-positions[k])
    }

    /// The position (source samples from the first) that plays at container time `time`: through
    /// the last packet with samples stamped at or before it, counting samples from there. May be
    /// negative (before the track starts) or past its end. (Packets that decode to nothing — a
    /// Vorbis stream's first, priming an edit list drops — say nothing about where samples play.)
    func position(at time: MediaTime) -> Int64 {
        var best: Int?
        for k in stamps.indices where stamps[k] != Self.noStamp && outputCounts[k] > 0 {
            if MediaTime(value: stamps[k], timeBase: timeBase) <= time { best = k } else if best != nil { break }
        }
        let unit = MediaTime(value: 1, timescale: Int32(sampleRate))
        guard let k = best ?? stamps.indices.first(where: { stamps[$0] != Self.noStamp && outputCounts[$0] > 0 }) else {
            return 0
        }
        return outputStarts[k] + (time - MediaTime(value: stamps[k], timeBase: timeBase)
            - MediaTime(value: outputStarts[k] - positions[k], timescale: Int32(sampleRate))).count(of: unit, rounding: .nearest)
    }

    /// The anchor for a segment that needs samples from `position` on: the packet that holds it,
    /// or the last stamped packet before it, stepped `back` packets further for decoder history.
    func anchor(atOrBefore position: Int64, back: Int = 1) -> AudioAnchor? {
        var chosen: Int?
        for k in stamps.indices where stamps[k] != Self.noStamp {
            if positions[k] <= position { chosen = k } else { break }
        }
        guard var k = chosen ?? stamps.indices.first(where: { stamps[$0] != Self.noStamp }) else { return nil }
        var steps = back
        while steps > 0, let earlier = stamps[..<k].lastIndex(where: { $0 != Self.noStamp }) {
            k = earlier
            steps -= 1
        }
        return AudioAnchor(stamp: stamps[k], position: positions[k], samples: Int64(sampleCounts[k]))
    }

    /// The container time of `anchor`'s packet.
    func time(of anchor: AudioAnchor) -> MediaTime { MediaTime(value: anchor.stamp, timeBase: timeBase) }

    private func samplesTime(_ n: Int64) -> MediaTime { MediaTime(value: n, timescale: Int32(sampleRate)) }
}
