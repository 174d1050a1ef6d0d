/// A half-open span of media time, `[start, start + duration)`.
public struct MediaTimeRange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The first instant inside the range.
    public var start: MediaTime
    /// How long the range lasts; never negative.
    public var duration: MediaTime

    /// A range from `start` lasting `duration` (a negative duration is clamped to zero).
    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration < .zero ? .zero : duration
    }

    /// The range `[start, end)`; empty when `end <= start`.
    public init(start: MediaTime, end: MediaTime) {
        self.init(start: start, duration: end - start)
    }

    /// The first instant after the range.
    public var end: MediaTime { start + duration }

    /// Whether the range holds no time at all.
    public var isEmpty: Bool { duration <= .zero }

    /// Whether `time` falls in `[start, end)`.
    public func contains(_ time: MediaTime) -> Bool {
        time >= start && time < end
    }

    /// The overlap of two ranges, or `nil` when they do not overlap.
    public func intersection(_ other: MediaTimeRange) -> MediaTimeRange? {
        let s = MediaTime.max(start, other.start)
        let e = MediaTime.min(end, other.end)
        return s < e ? MediaTimeRange(start: s, end: e) : nil
    }

    public var description: String { "[\(start), \(end))" }
}
