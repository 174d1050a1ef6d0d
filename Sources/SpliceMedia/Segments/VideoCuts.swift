/// Where to cut a video into segments so that `lanes` encoders finish together.
///
/// Video is re-encoded, so a segment may start at any frame: its encoder decodes from the source
/// keyframe at or before its start and drops what lies before it (the lead-in). The plan therefore
/// weighs each segment by its work — encoding its frames, decoding them and its lead-in:
///
///     cost = (1 + r) · length + r · lead-in        (r: decoding cost ÷ encoding cost)
///
/// and chooses cuts so that the segments cost the same and their number fills the lanes: the
/// count nearest `length ÷ target` (at least one per lane while no segment would be shorter than
/// the minimum), rounded up to a multiple of the lanes, so every round of dispatch keeps every
/// lane busy and the last round ends together. A cut within `snap` of a source keyframe moves onto
/// it (no lead-in to decode there, and a natural place for an I-frame); with keyframes at least as
/// dense as the target this reduces to cutting at keyframes. With one lane that always pays. With
/// several, moving a cut by a second moves a second of work onto one lane, and where the lanes end
/// together that second is the job's wall (a 22 s clip cut for two lanes at its keyframe at 12 s
/// instead of at 11 s left one lane idle for 9 % of the job), while the lead-ins the snaps save are
/// worth a tenth of an encode each (decoding a 960×540 H.264 source before each cut cost x264
/// medium 4 % more CPU): the cuts snap when the lanes, costs and lead-ins counted, end no later than
/// with cuts kept within a hundredth of a segment of equal work. With one keyframe (camera files,
/// screen recordings, long-GOP mezzanines) it still cuts, and the later segments are shorter so
/// that their longer lead-ins cost no more.
///
/// Everything is exact media time; costs are compared in integer microseconds.
struct VideoCuts {
    /// Video to cut: `[start, end)` in asset time.
    var start: MediaTime
    var end: MediaTime
    /// Source keyframes (presentation times, sorted, asset time).
    var keyframes: [MediaTime]
    var target: MediaTime
    var minimum: MediaTime
    /// Encoders that run at once.
    var lanes: Int
    /// What each segment after the first also encodes of the video before it (a bit rate's
    /// rate-control warm-up, ``RateControl/warmUp``; never before `start`): part of its cost, so
    /// segments of equal work make the first the longer by it.
    var warmUp: MediaTime?
    /// Decoding cost over encoding cost, in thousandths (x264 medium at 1080p: about 100).
    var decodeCostPerMille: Int64 = VideoCuts.defaultDecodeCostPerMille
    /// How close to a keyframe a cut moves onto it, as a fraction of the segment length (thousandths),
    /// and how close when snapping would make the lanes end later.
    var snapPerMille: Int64 = 150
    var nearPerMille: Int64 = 10

    /// Measured on this project's 2-core machine: decoding 1080p H.264 single-threaded costs about a
    /// tenth of encoding it with x264 medium (1.5 s against 13.5 s of CPU for 10 s of video).
    static let defaultDecodeCostPerMille: Int64 = 100

    /// The cuts (each strictly inside `(start, end)`) and each segment's cost in microseconds.
    ///
    /// The count is the one that finishes soonest on the lanes: `count` segments of equal cost take
    /// ceil(count ÷ lanes) rounds of (total ÷ count) each. Where keyframes are dense the lead-ins
    /// cost nothing and every multiple of the lanes ties, so the target's count (filled up to a
    /// multiple of the lanes) is taken; where they are sparse, each extra segment decodes a longer
    /// lead-in and the count stops where that stops paying. No segment is shorter than `minimum`.
    ///
    /// Warm-ups do not choose the count (they would always favour fewer segments; whether the
    /// target's length is kept is the planner's choice, ``SegmentPlanner/warmedTarget(length:warmUp:lanes:)``):
    /// the count is chosen without them, and its cuts made with them, for equal work.
    func choose() -> (cuts: [MediaTime], costs: [Int64]) {
        if warmUp != nil {
            var plain = self
            plain.warmUp = nil
            return choose(count: plain.choose().cuts.count + 1)
        }
        let length = micros(end - start)
        guard length > 0 else { return ([], [max(1, length)]) }
        let most = segmentCount(length: length)
        let lanes = max(1, self.lanes)
        // No count can finish sooner than the encode alone spread over the lanes: when the target's
        // count comes within the tolerance of that, it is the answer (dense keyframes, long files).
        let floor = (1000 + decodeCostPerMille) * length / 1000 / Int64(lanes)
        let target = choose(count: most)
        let targetBounds = [start] + target.cuts + [end]
        if zip(targetBounds, targetBounds.dropFirst()).allSatisfy({ $1 - $0 >= minimum }),
           Self.makespan(of: target.costs, lanes: lanes) * 100 <= floor * 102 {
            return target
        }
        var candidates: [(count: Int, makespan: Int64, plan: (cuts: [MediaTime], costs: [Int64]))] = []
        // The target's count and fewer in steps of the lanes, and every count up to four rounds
        // of the lanes (where sparse keyframes put the best): bounded, however long the file.
        let counts = Set([most] + stride(from: most, through: 1, by: -lanes).prefix(64) + Array(1...min(most, 4 * lanes)))
        for count in counts.sorted(by: >) {
            let plan = choose(count: count)
            let bounds = [start] + plan.cuts + [end]
            guard zip(bounds, bounds.dropFirst()).allSatisfy({ $1 - $0 >= minimum }) || count == 1 else { continue }
            candidates.append((count, Self.makespan(of: plan.costs, lanes: lanes), plan))
        }
        let best = candidates.map(\.makespan).min() ?? 0
        // Within 2 % of the best, the most segments (nearest the target) win.
        return candidates.first { $0.makespan * 100 <= best * 102 }?.plan ?? choose(count: 1)
    }

    /// When the last lane finishes if the segments go out most expensive first, each to the lane
    /// that frees first (what `transcode` and the cluster's dispatch do).
    static func makespan(of costs: [Int64], lanes: Int) -> Int64 {
        var loads = [Int64](repeating: 0, count: max(1, lanes))
        for cost in costs.sorted(by: >) {
            let lane = loads.indices.min { loads[$0] < loads[$1] }!
            loads[lane] += cost
        }
        return loads.max() ?? 0
    }

    /// `count` segments of equal cost.
    func choose(count: Int) -> (cuts: [MediaTime], costs: [Int64]) {
        guard count > 1 else { return ([], [cost(from: start, to: end)]) }
        // The per-segment cost that makes `count` segments end exactly at `end`: segments cut at
        // a given cost end later as the cost grows, so a bisection finds it.
        // The smallest budget whose cuts leave at most `count` segments.
        var low: Int64 = 0, high = cost(from: start, to: end)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if let made = cuts(costing: middle, limit: count), made.count <= count - 1 { high = middle } else { low = middle }
        }
        let even = cuts(costing: high, limit: count) ?? []
        let onKeyframes = snapped(even, perMille: snapPerMille)
        let wide = (cuts: onKeyframes, costs: costs(of: onKeyframes))
        guard lanes > 1 else { return wide }
        let balanced = snapped(even, perMille: nearPerMille)
        let near = (cuts: balanced, costs: costs(of: balanced))
        return Self.makespan(of: wide.costs, lanes: lanes) <= Self.makespan(of: near.costs, lanes: lanes) ? wide : near
    }

    /// Each segment's cost between `cuts`.
    private func costs(of cuts: [MediaTime]) -> [Int64] {
        zip([start] + cuts, cuts + [end]).map { cost(from: $0, to: $1) }
    }

    /// How many segments: the target's count, filled up to a multiple of the lanes, with none
    /// shorter than the minimum.
    func segmentCount(length: Int64) -> Int {
        let targetLength = max(1, micros(target))
        let atMost = max(1, Int(length / max(1, micros(minimum))))
        var count = max(1, Int((length + targetLength / 2) / targetLength))
        if lanes > 1 {
            count = max(count, lanes)
            count = (count + lanes - 1) / lanes * lanes
        }
        return min(count, atMost)
    }

    /// Cuts made greedily so that each segment costs `budget`, stopping after `limit` cuts; nil
    /// when the budget cannot even pay a segment's lead-in (too small).
    private func cuts(costing budget: Int64, limit: Int) -> [MediaTime]? {
        var cuts: [MediaTime] = []
        var from = start
        while cuts.count < limit {
            let (warm, lead) = warmUpAndLeadIn(at: from)
            let r = decodeCostPerMille
            // (1 + r)·(len + warm) + r·lead = budget  →  len = (budget − r·lead) / (1 + r) − warm
            let len = (budget * 1000 - r * lead) / (1000 + r) - warm
            guard len > 0 else { return nil }
            let cut = from + MediaTime(value: len, timescale: 1_000_000)
            guard cut < end else { break }
            cuts.append(cut)
            from = cut
        }
        return cuts
    }

    /// Each cut moved onto a keyframe that lies within `perMille` thousandths of its segment's
    /// length, keeping the cuts in order and at least `minimum` apart.
    private func snapped(_ cuts: [MediaTime], perMille: Int64) -> [MediaTime] {
        var result: [MediaTime] = []
        var previous = start
        for (i, cut) in cuts.enumerated() {
            let next = i + 1 < cuts.count ? cuts[i + 1] : end
            let tolerance = MediaTime(value: micros(cut - previous) * perMille / 1000, timescale: 1_000_000)
            let nearest = nearestKeyframe(to: cut)
            var chosen = cut
            if let nearest, distance(nearest, cut) <= tolerance, nearest - previous >= minimum, next - nearest >= minimum {
                chosen = nearest
            }
            result.append(chosen)
            previous = chosen
        }
        return result
    }

    /// The work of encoding `[from, to)`, in microseconds of encoding: with the warm-up before
    /// it, and the lead-in decoded from the keyframe before that.
    func cost(from: MediaTime, to: MediaTime) -> Int64 {
        let (warm, lead) = warmUpAndLeadIn(at: from)
        return ((1000 + decodeCostPerMille) * (micros(to - from) + warm) + decodeCostPerMille * lead) / 1000
    }

    /// What a segment starting at `from` encodes before it (µs), and decodes before that.
    private func warmUpAndLeadIn(at from: MediaTime) -> (warm: Int64, lead: Int64) {
        let warm = from > start ? warmUp.map { MediaTime.min($0, from - start) } ?? .zero : .zero
        let first = from - warm
        return (micros(warm), micros(first - keyframe(atOrBefore: first)))
    }

    /// The keyframe nearest `time`, if any.
    private func nearestKeyframe(to time: MediaTime) -> MediaTime? {
        var low = 0, high = keyframes.count
        while low < high {
            let middle = (low + high) / 2
            if keyframes[middle] <= time { low = middle + 1 } else { high = middle }
        }
        let around = [low - 1, low].filter { keyframes.indices.contains($0) }.map { keyframes[$0] }
        return around.min { distance($0, time) < distance($1, time) }
    }

    /// The last keyframe at or before `time` (the start when there is none).
    private func keyframe(atOrBefore time: MediaTime) -> MediaTime {
        var low = 0, high = keyframes.count
        while low < high {
            let middle = (low + high) / 2
            if keyframes[middle] <= time { low = middle + 1 } else { high = middle }
        }
        return low > 0 ? keyframes[low - 1] : min(start, keyframes.first ?? start)
    }

    private func micros(_ t: MediaTime) -> Int64 { t.converted(to: 1_000_000, rounding: .nearest).value }

    private func distance(_ a: MediaTime, _ b: MediaTime) -> MediaTime { a < b ? b - a : a - b }
}
