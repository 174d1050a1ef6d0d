import Dispatch
import Synchronization

/// Shows how far a long operation has come, on standard error.
///
/// On a terminal: one line redrawn in place at most ten times a second,
///
///     [##########--------------]  42%  00:12 elapsed  ETA 00:17  clip.mp4
///
/// Elsewhere (a pipe, a log file, CI): plain lines that do not depend on timing — `progress 40%`
/// each time a step boundary (5% by default) is crossed, every boundary exactly once; or, for
/// counted work, `progress 41% 5/12` each time the count changes.
///
/// Call ``finish()`` when the work succeeded and ``clear()`` when it failed or was cancelled, so
/// the error message that follows starts on a clean line. All display math is integer.
final class ProgressBar: Sendable {
    private struct State {
        var permille = 0
        var counts: (completed: Int, total: Int)?
        var lastDraw: UInt64?
        var lastPlainStep = -1
        var lastPlainCompleted = -1
        var isDone = false
    }

    private let label: String
    private let output: TextOutput
    private let clock: ProgressClock
    private let start: UInt64
    private let plainStep: Int
    private let barWidth: Int
    private let state = Mutex(State())

    /// Redraws closer together than this are skipped (the latest state is drawn by the next one).
    static let minimumRedrawInterval: UInt64 = 100_000_000

    /// A bar for `label` (a file name, a job id; may be empty) written to `output`.
    /// `plainStep` is the percentage between plain lines; it should divide 100.
    init(label: String = "", output: TextOutput = .standardError, clock: ProgressClock = .system,
         plainStep: Int = 5, barWidth: Int = 24) {
        self.label = label
        self.output = output
        self.clock = clock
        self.start = clock.nanoseconds()
        self.plainStep = max(1, plainStep)
        self.barWidth = max(1, barWidth)
    }

    /// Reports a fraction of the work done, 0…1 (values outside are clamped).
    func update(fraction: Double) {
        let permille = fraction.isNaN ? 0 : Int((min(max(fraction, 0), 1) * 1000).rounded(.down))
        record(permille: permille, counts: nil)
    }

    /// Reports `completed` of `total` units (segments) done.
    func update(completed: Int, total: Int) {
        let total = max(0, total)
        let completed = min(max(0, completed), total)
        record(permille: total == 0 ? 0 : completed * 1000 / total, counts: (completed, total))
    }

    /// Draws the final state and ends the line. Later updates are ignored.
    func finish() {
        state.withLock { state in
            guard !state.isDone else { return }
            state.isDone = true
            if output.isTerminal {
                output.write("\r" + terminalLine(state, now: clock.nanoseconds(), finished: true) + "\u{1B}[K\n")
            }
        }
    }

    /// Erases the bar from the terminal (nothing to undo in plain mode). Later updates are ignored.
    func clear() {
        state.withLock { state in
            guard !state.isDone else { return }
            state.isDone = true
            if output.isTerminal, state.lastDraw != nil { output.write("\r\u{1B}[K") }
        }
    }

    private func record(permille: Int, counts: (completed: Int, total: Int)?) {
        let now = clock.nanoseconds()
        state.withLock { state in
            guard !state.isDone else { return }
            state.permille = permille
            state.counts = counts
            if output.isTerminal {
                if let last = state.lastDraw, now &- last < ProgressBar.minimumRedrawInterval { return }
                state.lastDraw = now
                output.write("\r" + terminalLine(state, now: now, finished: false) + "\u{1B}[K")
            } else {
                writePlainLines(&state)
            }
        }
    }

    private func writePlainLines(_ state: inout State) {
        let percent = state.permille / 10
        if let counts = state.counts {
            guard counts.completed != state.lastPlainCompleted else { return }
            state.lastPlainCompleted = counts.completed
            let done = String(counts.completed) + "/" + String(counts.total)
            output.writeLine("progress " + String(percent) + "% " + done)
            return
        }
        while state.lastPlainStep < percent / plainStep {
            state.lastPlainStep += 1
            output.writeLine("progress " + String(state.lastPlainStep * plainStep) + "%")
        }
    }

    private func terminalLine(_ state: State, now: UInt64, finished: Bool) -> String {
        let elapsed = Int((now &- start) / 1_000_000)
        return ProgressBar.terminalLine(permille: state.permille, counts: state.counts, elapsedMilliseconds: elapsed,
                                        finished: finished, label: label, barWidth: barWidth,
                                        columns: output.columns)
    }

    /// `[#####-----]  42%  5/12  00:12 elapsed  ETA 00:17  label`, cut to fit `columns` - 1
    /// (so the terminal never wraps it). The ETA assumes the rest goes at the average rate so far.
    static func terminalLine(permille: Int, counts: (completed: Int, total: Int)?, elapsedMilliseconds: Int,
                             finished: Bool, label: String, barWidth: Int, columns: Int) -> String {
        let filled = permille * barWidth / 1000
        let percent = String(permille / 10)
        var line = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "] "
        line += String(repeating: " ", count: 3 - percent.count) + percent + "%"
        if let counts { line += "  " + String(counts.completed) + "/" + String(counts.total) }
        line += "  " + clockTime(milliseconds: elapsedMilliseconds) + " elapsed"
        if !finished {
            let remaining = permille > 0 ? elapsedMilliseconds * (1000 - permille) / permille : nil
            line += "  ETA " + (remaining.map { clockTime(milliseconds: $0 + 999) } ?? "--:--")
        }
        if !label.isEmpty { line += "  " + label }
        return line.count < columns ? line : String(line.prefix(max(0, columns - 1)))
    }

    /// `MM:SS`, or `H:MM:SS` from one hour on; whole seconds, rounded down.
    static func clockTime(milliseconds: Int) -> String {
        let seconds = max(0, milliseconds) / 1000
        let minutesAndSeconds = twoDigits(seconds / 60 % 60) + ":" + twoDigits(seconds % 60)
        return seconds >= 3600 ? String(seconds / 3600) + ":" + minutesAndSeconds : minutesAndSeconds
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0" + String(value) : String(value)
    }
}

/// A monotonic time source in nanoseconds; tests substitute one they advance by hand.
struct ProgressClock: Sendable {
    let nanoseconds: @Sendable () -> UInt64

    static let system = ProgressClock { DispatchTime.now().uptimeNanoseconds }
}
