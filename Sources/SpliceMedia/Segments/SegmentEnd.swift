import Synchronization

/// The end of a video segment while it is being encoded, which may still be brought forward: the
/// embedded transcoder hands the rest of a running segment's range to a lane that fell idle
/// (``Transcoder``). The segment's pipeline asks ``admits(_:)`` before it encodes each picture and
/// stops at the first one presented at or after the end; ``moveEnd(to:)`` succeeds only while no
/// picture at or after the new end has been encoded, so a picture goes to exactly one of the two
/// segments, whichever thread gets there first.
///
/// It also tells how far the segment is: the first and last picture encoded and when, from which
/// the transcoder estimates what is left of it.
public final class SegmentEnd: Sendable {
    /// How far a running segment is: pictures handed to the encoder, and pictures it has encoded
    /// (it holds some back for its look-ahead, and encodes them as it is fed or when it stops).
    public struct Position: Sendable, Hashable {
        /// Asset times of the first and the last picture handed to the encoder, and of the one
        /// before the last (the frame step, for ends that fall on a picture).
        public var first: MediaTime
        public var last: MediaTime
        public var previous: MediaTime?
        /// Pictures handed to the encoder so far.
        public var pictures: Int
        /// When the first and the last were handed over.
        public var firstAt: ContinuousClock.Instant
        public var lastAt: ContinuousClock.Instant
        /// Pictures the encoder has given back; how many it had given back the first time it gave
        /// any, and when; and when it gave back the latest.
        public var encoded = 0
        public var firstEncoded = 0
        public var firstEncodedAt: ContinuousClock.Instant?
        public var lastEncodedAt: ContinuousClock.Instant?

        public init(first: MediaTime, last: MediaTime, previous: MediaTime?, pictures: Int,
                    firstAt: ContinuousClock.Instant, lastAt: ContinuousClock.Instant, encoded: Int = 0,
                    firstEncoded: Int = 0, firstEncodedAt: ContinuousClock.Instant? = nil, lastEncodedAt: ContinuousClock.Instant? = nil) {
            self.first = first
            self.last = last
            self.previous = previous
            self.pictures = pictures
            self.firstAt = firstAt
            self.lastAt = lastAt
            self.encoded = encoded
            self.firstEncoded = firstEncoded
            self.firstEncodedAt = firstEncodedAt
            self.lastEncodedAt = lastEncodedAt
        }
    }

    private struct State {
        var end: MediaTime?
        var position: Position?
        /// Set once the pipeline has stopped taking pictures: the end can no longer move.
        var closed = false
    }

    private let state: Mutex<State>

    /// `end` nil: the segment runs to the end of the video.
    public init(end: MediaTime?) {
        state = Mutex(State(end: end))
    }

    /// The end now in force.
    public var end: MediaTime? { state.withLock { $0.end } }

    /// How far the segment is (nil before its first picture).
    public var position: Position? { state.withLock { $0.position } }

    /// Brings the end forward to `time`. Refused (false) once a picture at or after `time` has been
    /// encoded, once the segment has stopped, or when `time` is not before the current end.
    public func moveEnd(to time: MediaTime) -> Bool {
        state.withLock { s in
            guard !s.closed, s.end.map({ time < $0 }) ?? true else { return false }
            if let last = s.position?.last, last >= time { return false }
            s.end = time
            return true
        }
    }

    /// Whether the picture presented at `time` (asset time) belongs to the segment. The first one
    /// refused closes it: the end is final.
    func admits(_ time: MediaTime, at instant: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { s in
            if s.closed { return false }
            if let end = s.end, time >= end {
                s.closed = true
                return false
            }
            if var p = s.position {
                p.previous = p.last
                p.last = time
                p.lastAt = instant
                p.pictures += 1
                s.position = p
            } else {
                s.position = Position(first: time, last: time, previous: nil, pictures: 1, firstAt: instant, lastAt: instant)
            }
            return true
        }
    }

    /// The encoder has given back `count` pictures so far.
    func encoded(_ count: Int, at instant: ContinuousClock.Instant = .now) {
        state.withLock { s in
            guard var p = s.position, count > p.encoded else { return }
            if p.encoded == 0 {
                p.firstEncoded = count
                p.firstEncodedAt = instant
            }
            p.encoded = count
            p.lastEncodedAt = instant
            s.position = p
        }
    }

    /// The segment took its last picture (its input ended): the end can no longer move.
    func close() {
        state.withLock { $0.closed = true }
    }
}
