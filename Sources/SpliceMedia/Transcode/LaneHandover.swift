/// When a lane of the embedded transcoder falls idle with no segment left to start, the running
/// segment with the most encoding left hands the second part of what it has left to that lane.
///
/// The plan weighs segments by their length (and lead-ins), but encoding cost follows the
/// pictures: on a real clip x265 spent 21 to 42 ms a frame along it, and two lanes finished a
/// fifth of the job apart. A handover evens that out where it shows, at the end: the running
/// segment stops at a picture ahead of where it is (``SegmentEnd``) and a new segment takes the
/// rest, so both lanes end together. The new segment pays a start of its own — opening the source
/// and an encoder, decoding from the source keyframe before its first picture — so a handover
/// is made only when enough is left (``minimumRemaining``), gives the new segment no less than
/// ``minimumLength``, and gives it ``startUp`` less to do than the lane that keeps going.
///
/// Rates are measured, not planned: the pictures a segment's encoder has given back over the time
/// they took. What is left counts the pictures its encoder holds for its look-ahead (x265 medium:
/// about 25), which it still has to encode. Exact media time throughout; durations in whole
/// microseconds.
public struct LaneHandover: Sendable, Hashable {
    /// Least encoding time a running segment must have left, estimated, to be split.
    public var minimumRemaining: Duration
    /// The shortest video a handover gives the new segment.
    public var minimumLength: MediaTime
    /// What a new segment costs its lane before its first picture is encoded.
    public var startUp: Duration

    public init(minimumRemaining: Duration = .seconds(1), minimumLength: MediaTime = MediaTime(seconds: 1),
                startUp: Duration = .milliseconds(300)) {
        self.minimumRemaining = minimumRemaining
        self.minimumLength = minimumLength
        self.startUp = startUp
    }

    /// A running video segment, as the transcoder sees it.
    public struct Running: Sendable, Hashable {
        public var index: Int
        /// Where its video ends (asset time; for the last segment, the end of the video).
        public var end: MediaTime
        /// How far it is (nil before its first picture).
        public var position: SegmentEnd.Position?

        public init(index: Int, end: MediaTime, position: SegmentEnd.Position?) {
            self.index = index
            self.end = end
            self.position = position
        }

        /// What is left to encode: pictures not yet handed to the encoder (``toFeed``) and held in
        /// its look-ahead (``backlog``), and the time a picture takes at the rate the encoder has
        /// given them back so far (µs). Nil until three have come back a picture step apart.
        var left: (toFeed: Int64, backlog: Int64, microsPerPicture: Int64, step: MediaTime)? {
            guard let p = position, let previous = p.previous, p.last > previous, let from = p.firstEncodedAt,
                  let to = p.lastEncodedAt, p.encoded - p.firstEncoded >= 3 else { return nil }
            let step = p.last - previous
            // Pictures presented after the last one fed and before the end: last + k·step < end.
            let toFeed = max(0, (end - p.last).count(of: step, rounding: .up) - 1)
            let took = Self.micros(to - from)
            guard took > 0 else { return nil }
            return (toFeed, Int64(max(0, p.pictures - p.encoded)), took / Int64(p.encoded - p.firstEncoded), step)
        }

        /// Encoding time left, µs.
        var remainingMicroseconds: Int64? { left.map { ($0.toFeed + $0.backlog) * $0.microsPerPicture } }

        static func micros(_ d: Duration) -> Int64 {
            let (s, atto) = d.components
            return s * 1_000_000 + atto / 1_000_000_000_000
        }
    }

    /// Which segment hands over, and the asset time from which the new segment takes its pictures.
    public struct Decision: Sendable, Hashable {
        public var index: Int
        public var at: MediaTime
    }

    /// The handover to make for one idle lane, or nil when none pays. `warmUp`: the video a new
    /// segment encodes before its own first picture to settle a bit rate's control
    /// (``RateControl/warmUp``), part of the new lane's start-up.
    public func choose(_ running: [Running], warmUp: MediaTime = .zero) -> Decision? {
        let candidates = running.compactMap { r in r.left.map { (r, $0) } }
        guard let (segment, left) = candidates.max(by: { ($0.1.toFeed + $0.1.backlog) * $0.1.microsPerPicture
                                                         < ($1.1.toFeed + $1.1.backlog) * $1.1.microsPerPicture }),
              let last = segment.position?.last, left.microsPerPicture > 0,
              (left.toFeed + left.backlog) * left.microsPerPicture >= Running.micros(minimumRemaining) else { return nil }
        // The running lane encodes its backlog and `keep` more pictures; the new lane starts up and
        // encodes the rest. They end together when
        //     (backlog + keep) · c = startUp + warm-up pictures · c + (toFeed − keep) · c.
        let warmUpPictures = warmUp > .zero ? warmUp.count(of: left.step, rounding: .up) : 0
        let startUpPictures = Running.micros(startUp) / left.microsPerPicture + warmUpPictures
        let keep = max(1, (left.toFeed - left.backlog + startUpPictures) / 2)
        let at = (last + left.step * (keep + 1)).reduced
        guard keep < left.toFeed, segment.end - at >= minimumLength else { return nil }
        return Decision(index: segment.index, at: at)
    }
}
