/// Exponential backoff with jitter: attempt `n` (1-based) waits `min(cap, base · 2^(n−1))`,
/// spread uniformly by ±`jitter` so that many clients failing together do not retry together.
public struct Backoff: Sendable, Equatable {
    /// The delay before jitter for the first retry.
    public var base: Duration
    /// The largest delay before jitter.
    public var cap: Duration
    /// The fraction of the delay to spread by, in both directions (0.2 = ±20 %).
    public var jitter: Double

    /// A backoff starting at `base`, doubling up to `cap`, spread by ±`jitter` (0 ≤ jitter < 1).
    public init(base: Duration, cap: Duration, jitter: Double = 0.2) {
        precondition(base > .zero && cap >= base && (0..<1).contains(jitter), "invalid backoff")
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// Segment retries after a worker failure: 5 s, 10 s, 20 s, … up to 10 min, ±20 %.
    public static let segmentRetry = Backoff(base: .seconds(5), cap: .seconds(600))
    /// Reconnecting and retrying a transaction: 50 ms doubling up to 2 s, ±20 %.
    public static let transactionRetry = Backoff(base: .milliseconds(50), cap: .seconds(2))

    /// The delay before jitter for `attempt` (1-based; values below 1 count as 1).
    public func nominalDelay(attempt: Int) -> Duration {
        let doublings = max(0, min(attempt - 1, 62))
        let baseNanos = base.wholeNanoseconds
        let capNanos = cap.wholeNanoseconds
        // Stop doubling before overflow: once past the cap, the cap wins.
        if doublings >= baseNanos.leadingZeroBitCount - 1 { return cap }
        return .nanoseconds(min(capNanos, baseNanos << doublings))
    }

    /// The delay for `attempt` with jitter drawn from `generator`.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let nominal = Double(nominalDelay(attempt: attempt).wholeNanoseconds)
        let factor = jitter == 0 ? 1 : Double.random(in: (1 - jitter)...(1 + jitter), using: &generator)
        return .nanoseconds(Int((nominal * factor).rounded()))
    }

    /// The delay for `attempt` with system randomness.
    public func delay(attempt: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &generator)
    }
}
