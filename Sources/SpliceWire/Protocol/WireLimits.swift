import SpliceCore

/// The ranges the protocols allow for the numbers their messages carry. A decoded body with a
/// number outside its range is dropped as `out-of-range` (`MessageBody.rangeViolation()`), so the
/// state machines and the store only ever see values they can compute with: every interval fits
/// a `Duration` product many times over, every count fits the store's `integer` columns.
///
/// The bounds are generous, far beyond anything a sane peer sends, and tight enough that a
/// product of any two of them cannot overflow 64 bits.
public enum WireLimits {
    /// Slots one worker may offer (HELLO).
    public static let slots: ClosedRange<Int> = 1...1024
    /// Cores, or threads per slot, one worker may report (HELLO; Linux builds for at most 8,192 CPUs).
    public static let cores: ClosedRange<Int> = 1...65_536
    /// Any interval or lease, in milliseconds: up to one week.
    public static let milliseconds: ClosedRange<Int> = 1...604_800_000
    /// Silent heartbeat intervals before a side gives up on the other (WELCOME).
    public static let heartbeatLiveness: ClosedRange<Int> = 1...1000
    /// A segment index (the store's `integer`).
    public static let segmentIndex: ClosedRange<Int> = 0...Int(Int32.max)
    /// An attempt number (the store's `integer`; the first attempt is 1).
    public static let attempt: ClosedRange<Int> = 1...Int(Int32.max)
    /// A frame count.
    public static let frames: ClosedRange<Int> = 0...Int(Int32.max)
    /// A file size in bytes: up to 1 PiB.
    public static let bytes: ClosedRange<Int64> = 0...(1 << 50)
    /// A bit rate in bits per second: up to 1 Tbit/s.
    public static let bitsPerSecond: ClosedRange<Int64> = 0...1_000_000_000_000
    /// An encoder's quantiser (a mean frame QP): x264 and x265 stay under 70 (81 at 10 bits),
    /// libvpx and libaom under 256.
    public static let quantizer: ClosedRange<Double> = 0...1000
    /// A CRF (figures): x264/x265 0–51, libvpx, SVT-AV1 and libaom 0–63.
    public static let crf: ClosedRange<Double> = 0...63
    /// Full encodes of one segment under a quality target: one, or one corrective more.
    public static let encodes: ClosedRange<Int> = 1...2
    /// A PSNR in dB (identical pictures count as 100).
    public static let psnr: ClosedRange<Double> = 0...100
    /// An SSIM.
    public static let ssim: ClosedRange<Double> = -1...1
    /// An output time in milliseconds (figures): up to a year.
    public static let outputMilliseconds: ClosedRange<Int64> = 0...31_536_000_000
    /// An elapsed time in milliseconds (statistics): up to a year.
    public static let elapsedMilliseconds: ClosedRange<Int> = 0...31_536_000_000
    /// A job priority (SUBMIT).
    public static let priority: ClosedRange<Int> = -1000...1000
    /// Bytes one FETCH may ask for and one CHUNK carry (the envelope fits beside them in the
    /// 4 MiB message limit).
    public static let chunkBytes: ClosedRange<Int> = 1...(3 << 20)
    /// A fetch's session number (FETCH, echoed by CHUNK and MISSING).
    public static let transferSession: ClosedRange<Int> = 1...Int(Int32.max)
    /// A coordinator leadership epoch (WELCOME, STANDBY, ACTIVE): 1 and up.
    public static let epoch: ClosedRange<Int64> = 1...(1 << 62)
    /// A worker-protocol version (HELLO `protocolVersions`, DISCONNECT `versions`).
    public static let protocolVersion: ClosedRange<Int> = 1...1_000_000
    /// How many jobs a LIST may ask for (absent: 50).
    public static let listLimit: ClosedRange<Int> = 1...1000

    /// "`` `name` `` is `value`, outside `range`", or nil when inside.
    static func check<T: Comparable & CustomStringConvertible>(_ name: String, _ value: T, _ range: ClosedRange<T>)
        -> String?
    {
        range.contains(value) ? nil : "`\(name)` is \(value), outside \(range.lowerBound)…\(range.upperBound)"
    }

    /// The first violation of several checks.
    static func first(_ checks: String?...) -> String? {
        checks.lazy.compactMap { $0 }.first
    }
}

// MARK: - Worker protocol

extension SegmentAttempt {
    func rangeViolation() -> String? {
        WireLimits.first(
            WireLimits.check("segment", segment, WireLimits.segmentIndex),
            WireLimits.check("attempt", attempt, WireLimits.attempt))
    }
}

extension Hello {
    public func rangeViolation() -> String? {
        WireLimits.first(
            WireLimits.check("slots", slots, WireLimits.slots),
            usableCores.flatMap { WireLimits.check("usableCores", $0, WireLimits.cores) },
            threadsPerSlot.flatMap { WireLimits.check("threadsPerSlot", $0, WireLimits.cores) },
            protocolVersions.flatMap { $0.rangeViolation("protocolVersions") },
            running.lazy.compactMap { $0.rangeViolation() }.first,
            finished.lazy.compactMap { $0.rangeViolation() }.first,
            failed.lazy.compactMap { $0.rangeViolation() }.first)
    }
}

extension ProtocolVersions {
    func rangeViolation(_ name: String) -> String? {
        WireLimits.first(
            WireLimits.check("\(name).oldest", oldest, WireLimits.protocolVersion),
            WireLimits.check("\(name).newest", newest, WireLimits.protocolVersion),
            oldest <= newest ? nil : "`\(name)` is \(oldest)…\(newest): oldest after newest")
    }
}

extension Disconnect {
    public func rangeViolation() -> String? {
        versions.flatMap { $0.rangeViolation("versions") }
    }
}

extension Welcome {
    public func rangeViolation() -> String? {
        WireLimits.first(
            WireLimits.check("heartbeatIntervalMilliseconds", heartbeatIntervalMilliseconds, WireLimits.milliseconds),
            WireLimits.check("heartbeatLiveness", heartbeatLiveness, WireLimits.heartbeatLiveness),
            epoch.flatMap { WireLimits.check("epoch", $0, WireLimits.epoch) })
    }
}

extension Standby {
    public func rangeViolation() -> String? {
        epoch.flatMap { WireLimits.check("epoch", $0, WireLimits.epoch) }
    }
}

extension Active {
    public func rangeViolation() -> String? {
        WireLimits.check("epoch", epoch, WireLimits.epoch)
    }
}

extension Assign {
    public func rangeViolation() -> String? {
        WireLimits.first(
            attempt.rangeViolation(),
            WireLimits.check("leaseMilliseconds", leaseMilliseconds, WireLimits.milliseconds),
            WireLimits.check("progressIntervalMilliseconds", progressIntervalMilliseconds, WireLimits.milliseconds),
            excerpt?.rangeViolation())
    }
}

extension Accept {
    public func rangeViolation() -> String? { attempt.rangeViolation() }
}

extension Progress {
    public func rangeViolation() -> String? {
        WireLimits.first(
            attempt.rangeViolation(),
            fraction.isFinite && (0...1).contains(fraction) ? nil : "`fraction` is \(fraction), outside 0…1",
            WireLimits.check("frames", frames, WireLimits.frames),
            totalFrames.flatMap { WireLimits.check("totalFrames", $0, WireLimits.frames) })
    }
}

extension Complete {
    public func rangeViolation() -> String? {
        WireLimits.first(
            attempt.rangeViolation(),
            WireLimits.check("sizeBytes", sizeBytes, WireLimits.bytes),
            WireLimits.check("encodeMilliseconds", encodeMilliseconds, WireLimits.elapsedMilliseconds),
            videoFrames.flatMap { WireLimits.check("videoFrames", $0, WireLimits.frames) },
            figures?.rangeViolation())
    }
}

extension SegmentFigures {
    func rangeViolation() -> String? {
        WireLimits.first(
            WireLimits.check("figures.videoBytes", videoBytes, WireLimits.bytes),
            videoBitsPerSecond.flatMap { WireLimits.check("figures.videoBitsPerSecond", $0, WireLimits.bitsPerSecond) },
            // NaN compares false with every bound, so `contains` rejects it too.
            meanQP.flatMap { WireLimits.check("figures.meanQP", $0, WireLimits.quantizer) },
            crf.flatMap { WireLimits.check("figures.crf", $0, WireLimits.crf) },
            encodes.flatMap { WireLimits.check("figures.encodes", $0, WireLimits.encodes) },
            quality?.rangeViolation())
    }
}

extension SegmentQuality {
    func rangeViolation() -> String? {
        WireLimits.first(
            WireLimits.check("figures.quality.frames", frames, WireLimits.frames),
            WireLimits.check("figures.quality.psnrY", psnrY, WireLimits.psnr),
            WireLimits.check("figures.quality.psnr", psnr, WireLimits.psnr),
            WireLimits.check("figures.quality.minPSNRY", minPSNRY, WireLimits.psnr),
            WireLimits.check("figures.quality.worstSecondPSNRY", worstSecondPSNRY, WireLimits.psnr),
            WireLimits.check("figures.quality.ssimY", ssimY, WireLimits.ssim),
            WireLimits.check("figures.quality.ssim", ssim, WireLimits.ssim),
            WireLimits.check("figures.quality.minSSIMY", minSSIMY, WireLimits.ssim),
            WireLimits.check("figures.quality.worstSecondStartMilliseconds", worstSecondStartMilliseconds,
                             WireLimits.outputMilliseconds))
    }
}

extension Fail {
    public func rangeViolation() -> String? { attempt.rangeViolation() }
}

extension Ack {
    public func rangeViolation() -> String? { attempt.rangeViolation() }
}

extension Cancel {
    public func rangeViolation() -> String? { attempt.rangeViolation() }
}

// MARK: - Client API

extension SubmitJob {
    public func rangeViolation() -> String? {
        priority.flatMap { WireLimits.check("priority", $0, WireLimits.priority) }
    }
}

extension ListJobs {
    public func rangeViolation() -> String? {
        limit.flatMap { WireLimits.check("limit", $0, WireLimits.listLimit) }
    }
}
