public import SpliceCore
import Foundation

/// Per-frame picture quality of a stretch of video against its source, in presentation order:
/// each frame's output time and what FFmpeg's `psnr` and `ssim` filters said about it (mean
/// squared error of the luma and of all planes weighted by size, SSIM of the luma and of all
/// planes). Kept as columns so a segment's series is small in a segment file's trailer and in a
/// report. Everything else — PSNR, a segment's means, its worst second — is derived here, the
/// same way FFmpeg's filters derive their summaries (PSNR of the mean squared error; mean SSIM).
public struct QualitySeries: Sendable, Codable, Hashable {
    /// The time base of ``pts``.
    public var timeBase: Rational
    /// The largest sample value, `2^depth − 1` (255 for 8-bit pictures), which PSNR is relative to.
    public var peak: Int
    /// Output presentation times, rising.
    public var pts: [Int64] = []
    public var mseY: [Double] = []
    public var mse: [Double] = []
    public var ssimY: [Double] = []
    public var ssim: [Double] = []

    /// PSNR counted for a frame identical to its source (whose PSNR is infinite).
    public static let identicalPSNR = 100.0

    public init(timeBase: Rational, peak: Int) {
        self.timeBase = timeBase
        self.peak = peak
    }

    public var count: Int { pts.count }
    public var isEmpty: Bool { pts.isEmpty }

    /// Appends one frame's figures (frames must come in presentation order).
    mutating func append(pts: Int64, mseY: Double, mse: Double, ssimY: Double, ssim: Double) {
        self.pts.append(pts)
        self.mseY.append(mseY)
        self.mse.append(mse)
        self.ssimY.append(ssimY)
        self.ssim.append(ssim)
    }

    /// Appends every frame of `other` (same time base and peak), shifted by nothing.
    public mutating func append(contentsOf other: QualitySeries) {
        pts += other.pts
        mseY += other.mseY
        mse += other.mse
        ssimY += other.ssimY
        ssim += other.ssim
    }

    /// Frame `i`'s output time.
    public func time(_ i: Int) -> MediaTime { MediaTime(value: pts[i], timeBase: timeBase) }

    /// Frame `i`'s luma PSNR, dB.
    public func psnrY(_ i: Int) -> Double { psnr(mse: mseY[i]) }

    /// PSNR in dB of a mean squared error, as FFmpeg's `psnr` filter computes it
    /// (10·log10(peak² / mse)); ``identicalPSNR`` for none.
    public func psnr(mse: Double) -> Double {
        guard mse > 0 else { return Self.identicalPSNR }
        return min(Self.identicalPSNR, 10 * log10(Double(peak) * Double(peak) / mse))
    }

    /// The frames whose output time lies in `[start, end)` (nil bounds are open).
    public func indices(from start: MediaTime?, to end: MediaTime?) -> Range<Int> {
        let lower = start.map { s in pts.partitionPoint { MediaTime(value: $0, timeBase: timeBase) >= s } } ?? 0
        let upper = end.map { e in pts.partitionPoint { MediaTime(value: $0, timeBase: timeBase) >= e } } ?? pts.count
        return lower..<max(lower, upper)
    }

    /// The summary of frames `range`, or nil when it holds none: PSNR of the mean squared errors,
    /// mean SSIMs, the worst frame and the worst second.
    public func summary(_ range: Range<Int>? = nil) -> SegmentQuality? {
        let range = range ?? 0..<count
        guard !range.isEmpty else { return nil }
        let n = Double(range.count)
        let second = MediaTime(seconds: 1)
        // The second of frames with the highest mean luma error: each frame starts a window that
        // runs to the last frame presented less than a second after it (two pointers, a running sum).
        var worstMSE = -1.0, worstStart = range.lowerBound
        var end = range.lowerBound, sum = 0.0
        for start in range {
            let limit = time(start) + second
            while end < range.upperBound && time(end) < limit {
                sum += mseY[end]
                end += 1
            }
            let mean = sum / Double(end - start)
            if mean > worstMSE {
                worstMSE = mean
                worstStart = start
            }
            sum -= mseY[start]
            if end == range.upperBound { break }  // later windows are shorter tails of this one
        }
        let rounding = { (value: Double, places: Double) in (value * places).rounded() / places }
        return SegmentQuality(
            frames: range.count,
            psnrY: rounding(psnr(mse: mseY[range].reduce(0, +) / n), 1000),
            psnr: rounding(psnr(mse: mse[range].reduce(0, +) / n), 1000),
            ssimY: rounding(ssimY[range].reduce(0, +) / n, 1_000_000),
            ssim: rounding(ssim[range].reduce(0, +) / n, 1_000_000),
            minPSNRY: rounding(psnr(mse: mseY[range].max() ?? 0), 1000),
            minSSIMY: rounding(ssimY[range].min() ?? 0, 1_000_000),
            worstSecondPSNRY: rounding(psnr(mse: worstMSE), 1000),
            worstSecondStartMilliseconds: time(worstStart).converted(to: 1000, rounding: .down).value)
    }
}

extension Array {
    /// The first index whose element satisfies `predicate`, for a predicate that is false and then
    /// true along the array (binary search); `count` when it never holds.
    func partitionPoint(_ predicate: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if predicate(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
