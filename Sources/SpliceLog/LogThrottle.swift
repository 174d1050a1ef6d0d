import Synchronization

/// Bounds how often a repeated line is written: per key, at most one line per `interval`, and
/// that line says how many were held back since the last one. For lines a peer can cause at will
/// (a dropped message per garbage frame), so that a flood costs a line a second, not a line a
/// message — while the counters the lines describe keep counting every one.
///
///     if let suppressed = throttle.admit(rejection.reason.rawValue) {
///         logger.warning("message dropped", ["reason": …, "suppressed": suppressed])
///     }
public final class LogThrottle: Sendable {
    private struct Entry {
        var lastWritten: ContinuousClock.Instant
        var suppressed: Int
    }

    private let interval: Duration
    private let entries = Mutex<[String: Entry]>([:])

    public init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Whether a line for `key` may be written at `now`: nil to hold it back, else how many lines
    /// of this key were held back since the last one written.
    public func admit(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        entries.withLock { entries in
            if var entry = entries[key], now - entry.lastWritten < interval {
                entry.suppressed += 1
                entries[key] = entry
                return nil
            }
            let suppressed = entries[key]?.suppressed ?? 0
            entries[key] = Entry(lastWritten: now, suppressed: 0)
            return suppressed
        }
    }
}
