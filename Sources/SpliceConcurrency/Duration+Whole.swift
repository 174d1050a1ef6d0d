extension Duration {
    /// The duration in whole milliseconds, as the protocol, the store, libzmq options and log lines
    /// carry durations: truncated toward zero (−1.9 ms is −1), saturating at `Int.min`/`Int.max`.
    package var wholeMilliseconds: Int { whole(unitsPerSecond: 1_000) }

    /// The duration in whole microseconds (truncated toward zero, saturating).
    package var wholeMicroseconds: Int { whole(unitsPerSecond: 1_000_000) }

    /// The duration in whole nanoseconds (truncated toward zero, saturating).
    package var wholeNanoseconds: Int { whole(unitsPerSecond: 1_000_000_000) }

    /// `components` (whose attoseconds share the sign of the seconds) counted in a unit that
    /// divides a second.
    private func whole(unitsPerSecond: Int64) -> Int {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: unitsPerSecond)
        let (sum, carry) = scaled.addingReportingOverflow(attoseconds / (1_000_000_000_000_000_000 / unitsPerSecond))
        guard !overflow && !carry else { return seconds < 0 ? .min : .max }
        return Int(clamping: sum)
    }
}
