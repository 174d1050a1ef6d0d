import SpliceMedia
import SpliceStore

/// The exact media range a planned segment covers, as the `segments` table records it
/// (`[start, end)` in `1/timescale` s). Informational for people and queries: workers get the
/// whole segment spec from the plan. Video segments use their presentation range in asset time;
/// audio segments their kept samples.
struct SegmentRange {
    var start: Int64
    var end: Int64
    var timescale: Int32
    var spec: SegmentSpec

    init(spec: SegmentSpec, in plan: SegmentPlan) throws {
        self.spec = spec
        if let audio = spec.audio, let framing = plan.framing(of: audio) {
            let rate = Int32(clamping: framing.sampleRate)
            let first = audio.keepStart ?? 0
            timescale = rate
            start = first
            end = audio.keepEnd ?? plan.approximateDuration(of: spec).map { first + $0.converted(to: rate).value }
                ?? first + 1
        } else {
            let first = spec.videoStart ?? plan.outputZero
            let last = spec.videoEnd ?? plan.outputEnd ?? plan.assetDuration ?? first
            timescale = max(first.timescale, last.timescale)
            start = first.converted(to: timescale, rounding: .down).value
            end = last.converted(to: timescale, rounding: .up).value
        }
        if end <= start { end = start + 1 }  // an unknown end: the row still needs a non-empty range
    }

    /// The row `recordPlan` inserts, with the planner's cost (claims take the most expensive first).
    var planned: PlannedSegment {
        get throws {
            PlannedSegment(index: spec.index, rangeStart: start, rangeEnd: end, timescale: timescale,
                           spec: try PostgresJSON(encoding: spec), cost: spec.cost ?? 0)
        }
    }
}
