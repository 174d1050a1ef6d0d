import Foundation

/// How an audio encoder cuts time: every packet holds ``samplesPerPacket`` samples (F), the first
/// real sample is preceded by ``priming`` samples of encoder delay (P), and segments are encoded
/// with ``preRollPackets`` (R) of real audio before their cut and ``tailPackets`` (T) after it.
public struct AudioFraming: Sendable, Codable, Hashable {
    public var sampleRate: Int
    public var samplesPerPacket: Int
    public var priming: Int
    public var preRollPackets: Int
    public var tailPackets: Int

    public init(sampleRate: Int, samplesPerPacket: Int, priming: Int, preRollPackets: Int, tailPackets: Int) {
        self.sampleRate = sampleRate
        self.samplesPerPacket = samplesPerPacket
        self.priming = priming
        self.preRollPackets = preRollPackets
        self.tailPackets = tailPackets
    }

    /// Packets of priming: D = ceil(P / F).
    public var primingPackets: Int { (priming + samplesPerPacket - 1) / samplesPerPacket }

    /// The packet grid of the joined stream: packet k starts at sample k·F − P.
    public func nearestGridPoint(to sample: Int64) -> Int64 {
        let f = Int64(samplesPerPacket), p = Int64(priming)
        let k = floorDiv(sample + p + f / 2, f)
        return k * f - p
    }

    /// Where a segment that keeps `[start, …)` must start encoding: R packets of pre-roll plus
    /// the priming, so that packet D + R of its encoder begins exactly at `start`.
    public func encodeStart(forKeepStart start: Int64) -> Int64 {
        start - Int64(primingPackets + preRollPackets) * Int64(samplesPerPacket) + Int64(priming)
    }
}

/// Which output samples one segment encodes and which packets of it the stitcher keeps.
/// Positions are output samples counted from the job's output zero.
public struct AudioSegmentRange: Sendable, Codable, Hashable {
    /// First sample the segment's encoder is fed (includes pre-roll).
    public var encodeStart: Int64
    /// Where feeding stops (includes tail); nil for the last segment: the end of the audio.
    public var encodeEnd: Int64?
    /// Packets whose pts fall in `[keepStart, keepEnd)` are kept; nil bounds are open (the first
    /// segment keeps its priming packets, the last keeps everything to the end).
    public var keepStart: Int64?
    public var keepEnd: Int64?
}

/// One planned segment: a video presentation range in asset time and an audio sample range.
public struct SegmentSpec: Sendable, Codable, Hashable, Identifiable {
    public var index: Int
    /// Video frames presented in `[videoStart, videoEnd)`; nil bounds are open (the first segment
    /// starts at the first frame, the last runs to the end).
    public var videoStart: MediaTime?
    public var videoEnd: MediaTime?
    public var audio: AudioSegmentRange?
    /// The work of encoding it, relative to the plan's other segments (microseconds of encoding,
    /// lead-in decoding included; ``VideoCuts``): the most expensive go first, and progress is
    /// weighted by it. Nil in plans made before it existed, and for audio-only plans.
    public var cost: Int64?

    public var id: Int { index }
}

/// A job cut into segments: everything a worker needs to encode any one of them and the
/// stitcher needs to join them. Codable: it travels to remote workers.
public struct SegmentPlan: Sendable, Codable, Hashable {
    /// Identifies the plan; segment files carry it so the stitcher refuses strangers.
    public var id: String
    /// The source path or URL.
    public var source: String
    /// Video settings (nil: the output has no video).
    public var videoSettings: VideoSettings?
    /// Audio settings (nil: the output has no audio).
    public var audioSettings: AudioSettings?
    public var outputFileType: OutputFileType
    public var optimizesForNetworkUse: Bool
    public var metadata: [String: String]
    /// Asset time that becomes output time zero (the start of the requested range, or zero).
    public var outputZero: MediaTime
    /// Asset time where the output ends, when a range was requested.
    public var outputEnd: MediaTime?
    /// The asset's duration when known, for progress.
    public var assetDuration: MediaTime?
    /// Audio framing of the chosen encoder, when there is audio.
    public var audioFraming: AudioFraming?
    public var targetDuration: MediaTime
    public var segments: [SegmentSpec]

    /// The asset-time span segment `spec` covers, for progress and reports (nil when unknown).
    public func approximateDuration(of spec: SegmentSpec) -> MediaTime? {
        if let audio = spec.audio, let framing = audioFraming, spec.videoStart == nil && spec.videoEnd == nil && videoSettings == nil {
            let start = audio.keepStart ?? 0
            guard let end = audio.keepEnd ?? assetDuration.map({ ($0 - outputZero).count(of: MediaTime(value: 1, timescale: Int32(framing.sampleRate))) }) else {
                return nil
            }
            return MediaTime(value: end - start, timescale: Int32(framing.sampleRate))
        }
        let start = spec.videoStart ?? outputZero
        guard let end = spec.videoEnd ?? outputEnd ?? assetDuration else { return nil }
        return end - start
    }
}
