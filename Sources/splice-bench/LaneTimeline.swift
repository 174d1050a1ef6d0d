import Foundation

/// Where a `splice transcode --json` job's lanes waited, from each segment's start and finish
/// (`startedMicroseconds`, `finishedMicroseconds`): how many lanes were busy on average over the
/// encode, and how far apart the lanes ended — each lane's last segment is among the last `lanes`
/// to finish, as a freed lane starts the next segment at once, so the spread of those finishes is
/// the idle tail that equal planned costs did not prevent.
struct LaneTimeline {
    struct Summary: Decodable {
        struct Segment: Decodable {
            var videoFrames: Int
            var startedMicroseconds: Int64?
            var finishedMicroseconds: Int64?
        }
        struct Handover: Decodable {}
        var segments: [Segment]
        /// Segments a lane that fell idle took over (absent from a `splice` older than handovers).
        var handovers: [Handover]?
    }

    /// Segment walls summed over the encode's span, thousandths of a lane (1900: 1.9 lanes busy).
    var busyThousandths: Int64
    /// From the first lane ending to the last, µs.
    var tailMicroseconds: Int64
    /// Handovers to idle lanes.
    var handovers: Int

    /// Nil when the summary has no timings (a `splice` older than the timings, or no video).
    init?(summaryAt path: String, lanes: Int) throws {
        let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        let spans = summary.segments.filter { $0.videoFrames > 0 }.compactMap { s in
            s.startedMicroseconds.flatMap { a in s.finishedMicroseconds.map { (start: a, end: $0) } }
        }
        guard !spans.isEmpty, let end = spans.map(\.end).max(), end > 0 else { return nil }
        busyThousandths = spans.reduce(Int64(0)) { $0 + ($1.end - $1.start) } * 1000 / end
        let lastFinishes = spans.map(\.end).sorted().suffix(max(1, lanes))
        tailMicroseconds = (lastFinishes.last ?? 0) - (lastFinishes.first ?? 0)
        handovers = summary.handovers?.count ?? 0
    }

    /// "1.806 busy, ended 2154 ms apart, 1 handover" from the medians of several runs.
    static func describe(_ timelines: [LaneTimeline]) -> String? {
        guard !timelines.isEmpty else { return nil }
        let busy = Stats.median(timelines.map(\.busyThousandths)), tail = Stats.median(timelines.map(\.tailMicroseconds))
        let handovers = Stats.median(timelines.map { Int64($0.handovers) })
        return "\(Stats.ratio(busy, 1000)) busy, ended \(Stats.milliseconds(UInt64(max(0, tail)) * 1000)) apart, "
            + "\(handovers) handover\(handovers == 1 ? "" : "s")"
    }
}
