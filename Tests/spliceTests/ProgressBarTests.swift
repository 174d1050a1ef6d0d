import Synchronization
import Testing

@testable import splice

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let now = Mutex<UInt64>(1_000_000_000)

    var clock: ProgressClock {
        ProgressClock { [self] in now.withLock { $0 } }
    }

    func advance(milliseconds: UInt64) {
        now.withLock { $0 += milliseconds * 1_000_000 }
    }
}

@Suite("Progress bar")
struct ProgressBarTests {
    @Test("the terminal line shows bar, percent, elapsed time, ETA and label")
    func terminalLine() {
        let line = ProgressBar.terminalLine(permille: 420, counts: nil, elapsedMilliseconds: 10_000, finished: false,
                                            label: "clip.mp4", barWidth: 24, columns: 80)
        #expect(line == "[##########--------------]  42%  00:10 elapsed  ETA 00:14  clip.mp4")
        let start = ProgressBar.terminalLine(permille: 0, counts: nil, elapsedMilliseconds: 300, finished: false,
                                             label: "", barWidth: 10, columns: 80)
        #expect(start == "[----------]   0%  00:00 elapsed  ETA --:--")
        let done = ProgressBar.terminalLine(permille: 1000, counts: (12, 12), elapsedMilliseconds: 3_725_000,
                                            finished: true, label: "job 7", barWidth: 10, columns: 80)
        #expect(done == "[##########] 100%  12/12  1:02:05 elapsed  job 7")
    }

    @Test("the line is cut to fit the terminal so it never wraps")
    func truncation() {
        let line = ProgressBar.terminalLine(permille: 500, counts: nil, elapsedMilliseconds: 0, finished: false,
                                            label: String(repeating: "x", count: 200), barWidth: 24, columns: 60)
        #expect(line.count == 59)
        #expect(line.hasPrefix("[############------------]  50%"))
    }

    @Test("clock times are MM:SS, H:MM:SS from an hour on")
    func clockTimes() {
        #expect(ProgressBar.clockTime(milliseconds: 0) == "00:00")
        #expect(ProgressBar.clockTime(milliseconds: 59_999) == "00:59")
        #expect(ProgressBar.clockTime(milliseconds: 754_000) == "12:34")
        #expect(ProgressBar.clockTime(milliseconds: 3_600_000) == "1:00:00")
        #expect(ProgressBar.clockTime(milliseconds: -5) == "00:00")
    }

    @Test("on a terminal, redraws come at most every 100 ms and finish always draws")
    func throttling() {
        let (bar, clock, captured) = terminalBar(label: "a", barWidth: 10)
        bar.update(fraction: 0)
        clock.advance(milliseconds: 50)
        bar.update(fraction: 0.1)  // too soon: skipped
        clock.advance(milliseconds: 49)
        bar.update(fraction: 0.15)  // 99 ms after the first draw: skipped
        clock.advance(milliseconds: 1)
        bar.update(fraction: 0.25)
        clock.advance(milliseconds: 10)
        bar.update(fraction: 0.5)  // skipped, but finish shows it
        bar.finish()
        bar.update(fraction: 0.9)  // after finish: ignored
        #expect(captured.value.split(separator: "\r", omittingEmptySubsequences: true) == [
            "[----------]   0%  00:00 elapsed  ETA --:--  a\u{1B}[K",
            "[##--------]  25%  00:00 elapsed  ETA 00:01  a\u{1B}[K",
            "[#####-----]  50%  00:00 elapsed  a\u{1B}[K\n",
        ])
    }

    @Test("clear erases the bar from the line")
    func clearing() {
        let (bar, _, captured) = terminalBar(label: "", barWidth: 4)
        bar.update(fraction: 0.5)
        bar.clear()
        bar.finish()
        #expect(captured.value == "\r[##--]  50%  00:00 elapsed  ETA 00:00\u{1B}[K\r\u{1B}[K")
    }

    @Test("plain output prints each step boundary once, whatever the timing and order of updates")
    func plainSteps() {
        let output = plainOutput(step: 25) { bar in
            for fraction in [0, 0.01, 0.3, 0.29, 0.31, 0.99, 1, 1] { bar.update(fraction: fraction) }
        }
        #expect(output == "progress 0%\nprogress 25%\nprogress 50%\nprogress 75%\nprogress 100%\n")
    }

    @Test("plain output for counted work prints a line when the count changes")
    func plainCounts() {
        let output = plainOutput(step: 5) { bar in
            for done in [0, 0, 1, 1, 3, 12, 40] { bar.update(completed: done, total: 12) }
        }
        #expect(output == "progress 0% 0/12\nprogress 8% 1/12\nprogress 25% 3/12\nprogress 100% 12/12\n")
    }

    @Test("counted work on a terminal shows done/total and an ETA from the average rate")
    func countedTerminal() {
        let (bar, clock, captured) = terminalBar(label: "job", barWidth: 8)
        clock.advance(milliseconds: 30_000)
        bar.update(completed: 3, total: 12)
        #expect(captured.value == "\r[##------]  25%  3/12  00:30 elapsed  ETA 01:30  job\u{1B}[K")
    }

    /// A bar on a fake terminal with a hand-driven clock.
    private func terminalBar(label: String, barWidth: Int) -> (ProgressBar, ManualClock, Captured) {
        let clock = ManualClock()
        let captured = Captured(isTerminal: true)
        return (ProgressBar(label: label, output: captured.output, clock: clock.clock, barWidth: barWidth), clock,
                captured)
    }

    /// What a bar writes to a pipe while `updates` drive it, through `finish()`.
    private func plainOutput(step: Int, _ updates: (ProgressBar) -> Void) -> String {
        let captured = Captured(isTerminal: false)
        let bar = ProgressBar(output: captured.output, clock: ManualClock().clock, plainStep: step)
        updates(bar)
        bar.finish()
        return captured.value
    }
}
