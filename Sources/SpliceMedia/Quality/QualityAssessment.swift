import Foundation
import SpliceCore

/// Judges measured video against thresholds: per segment (mean PSNR and SSIM, the worst second)
/// and at every join (the dip of the frames nearest it under the second around it), naming each
/// problem by segment and time. The same rules for `splice verify` and for a verified job.
struct QualityAssessment {
    let thresholds: QualityThresholds

    /// Where a segment starts, in output time.
    struct Boundary {
        var segment: Int
        var start: MediaTime
    }

    /// Frames nearest a join whose quality is compared with the second around it.
    static let joinFrames = 12

    /// Each segment's figures and the problems they show. `boundaries` in output order; the last
    /// segment runs to the end.
    func segments(_ series: QualitySeries, boundaries: [Boundary], figures: [Int: SegmentFigures] = [:])
        -> (entries: [QualityReport.SegmentEntry], problems: [QualityReport.Problem]) {
        var entries: [QualityReport.SegmentEntry] = []
        var problems: [QualityReport.Problem] = []
        for (i, boundary) in boundaries.enumerated() {
            let end = i + 1 < boundaries.count ? boundaries[i + 1].start : nil
            let range = series.indices(from: i == 0 ? nil : boundary.start, to: end)
            let quality = series.summary(range)
            var passed = true
            let startMS = boundary.start.milliseconds
            if let q = quality {
                func problem(_ kind: String, _ at: Int64, _ message: String) {
                    passed = false
                    problems.append(.init(kind: kind, segment: boundary.segment, timeMilliseconds: at, message: message))
                }
                let name = "segment \(boundary.segment) (\(startMS.clock))"
                if q.psnrY < thresholds.minPSNR {
                    problem("segment", startMS, "\(name): PSNR \(Self.dB(q.psnrY)) under --min-psnr \(thresholds.minPSNR)")
                }
                if q.ssimY < thresholds.minSSIM {
                    problem("segment", startMS, "\(name): SSIM \(Self.ssim(q.ssimY)) under --min-ssim \(thresholds.minSSIM)")
                }
                if q.worstSecondPSNRY < thresholds.minSecondPSNR {
                    problem("second", q.worstSecondStartMilliseconds, "\(name): the second from "
                            + "\(q.worstSecondStartMilliseconds.clock) has PSNR \(Self.dB(q.worstSecondPSNRY)), under "
                            + "--min-second-psnr \(thresholds.minSecondPSNR)")
                }
            }
            let endMS = end?.milliseconds ?? range.last.map { series.time($0).milliseconds } ?? startMS
            entries.append(.init(index: boundary.segment, startMilliseconds: startMS, endMilliseconds: endMS,
                                 quality: quality, figures: figures[boundary.segment], passed: passed))
        }
        return (entries, problems)
    }

    /// The dip at every join (every boundary after the first).
    func joins(_ series: QualitySeries, boundaries: [Boundary])
        -> (joins: [QualityReport.VideoJoin], problems: [QualityReport.Problem]) {
        var joins: [QualityReport.VideoJoin] = []
        var problems: [QualityReport.Problem] = []
        let second = MediaTime(seconds: 1)
        for boundary in boundaries.dropFirst() {
            let first = series.indices(from: boundary.start, to: nil).lowerBound
            let half = Self.joinFrames / 2
            let near = max(0, first - half)..<min(series.count, first + half)
            let around = series.indices(from: boundary.start - second, to: boundary.start + second)
            let others = around.filter { !near.contains($0) }
            guard !near.isEmpty, !others.isEmpty else { continue }
            let mean = { (indices: [Int]) in series.psnr(mse: indices.map { series.mseY[$0] }.reduce(0, +) / Double(indices.count)) }
            let dip = ((mean(others) - mean(Array(near))) * 1000).rounded() / 1000
            let passed = dip <= thresholds.maxJoinDip
            let at = boundary.start.milliseconds
            joins.append(.init(segment: boundary.segment, timeMilliseconds: at, dip: dip, passed: passed))
            if !passed {
                problems.append(.init(kind: "join", segment: boundary.segment, timeMilliseconds: at,
                                      message: "join at \(at.clock) (segment \(boundary.segment) starts): its frames dip "
                                          + "\(Self.dB(dip)) under the second around it (--max-join-dip \(thresholds.maxJoinDip))"))
            }
        }
        return (joins, problems)
    }

    /// Problems for frames missing, extra or shown in the wrong place, each named by the segment
    /// its time falls in.
    static func frameProblems(_ check: QualityReport.FrameCheck, boundaries: [Boundary]) -> [QualityReport.Problem] {
        func segment(_ ms: Int64) -> Int? {
            boundaries.last { $0.start.milliseconds <= ms }?.segment ?? boundaries.first?.segment
        }
        func place(_ ms: Int64) -> String {
            let s = segment(ms).map { " (segment \($0)" + (boundaries.contains { $0.start.milliseconds == ms } ? ", its first frame)" : ")") } ?? ""
            return ms.clock + s
        }
        var problems: [QualityReport.Problem] = []
        if check.expected != check.output {
            problems.append(.init(kind: "frames", segment: nil, timeMilliseconds: nil,
                                  message: "the output has \(check.output) video frames where the source has \(check.expected)"))
        }
        for ms in check.missing.prefix(20) {
            problems.append(.init(kind: "frames", segment: segment(ms), timeMilliseconds: ms,
                                  message: "a source frame at \(place(ms)) is missing from the output"))
        }
        for ms in check.extra.prefix(20) {
            problems.append(.init(kind: "frames", segment: segment(ms), timeMilliseconds: ms,
                                  message: "an output frame at \(place(ms)) has no source frame at its time"))
        }
        for shift in check.shifted.prefix(20) {
            let what = shift.offset < 0 ? "the source's previous frame (a picture repeated)"
                : "the source's next frame (a picture dropped)"
            problems.append(.init(kind: "frames", segment: segment(shift.timeMilliseconds), timeMilliseconds: shift.timeMilliseconds,
                                  message: "from \(place(shift.timeMilliseconds)), \(shift.frames) frame"
                                      + (shift.frames == 1 ? " shows " : "s show ") + what))
        }
        return problems
    }

    static func dB(_ value: Double) -> String { String(format: "%.2f dB", value) }
    static func ssim(_ value: Double) -> String { String(format: "%.4f", value) }
}

extension MediaTime {
    /// Whole milliseconds, rounded down (for reports).
    var milliseconds: Int64 { converted(to: 1000, rounding: .down).value }
}
