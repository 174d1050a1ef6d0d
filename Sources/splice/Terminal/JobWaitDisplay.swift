import Foundation
import SpliceClient
import SpliceCore
import SpliceWire
import Synchronization

/// The live part of `submit --wait`: a progress bar over segments done, and one line on stderr
/// when the coordinator stops answering and when it answers again.
final class JobWaitDisplay: Sendable {
    private let bar: ProgressBar
    private let output: TextOutput
    private let unreachable = Mutex(false)
    /// The waiting reason last shown, so it is written once per change.
    private let waiting = Mutex<String?>(nil)

    init(label: String, output: TextOutput, clock: ProgressClock = .system) {
        bar = ProgressBar(label: label, output: output, clock: clock)
        self.output = output
    }

    func show(_ event: JobWaitEvent) {
        switch event {
        case .status(let status):
            // Until the job is planned its segment count is unknown: the bar starts then.
            if let total = status.segmentsTotal { bar.update(completed: status.segmentsDone, total: total) }
            let changed = waiting.withLock { shown in
                defer { shown = status.waiting }
                return shown != status.waiting ? status.waiting : nil
            }
            if let changed { writeLine("waiting: \(changed)") }
        case .unreachable(let error):
            let first = unreachable.withLock { wasUnreachable in
                defer { wasUnreachable = true }
                return !wasUnreachable
            }
            // The coordinator answering that it cannot serve (its store is down) is not the
            // coordinator being gone: say which.
            let line = error.code == .rejected
                ? "coordinator cannot answer yet, retrying (\(error.message))"
                : "coordinator unreachable, retrying (\(error.message))"
            if first { writeLine(line) }
        case .reachable:
            unreachable.withLock { $0 = false }
            writeLine("coordinator reachable again")
        }
    }

    /// Ends the bar: drawn complete after success, erased otherwise.
    func stop(succeeded: Bool) {
        if succeeded { bar.finish() } else { bar.clear() }
    }

    /// A line of its own, even while the bar is drawn in place on a terminal (it redraws below).
    private func writeLine(_ line: String) {
        output.write((output.isTerminal ? "\r\u{1B}[K" : "") + line + "\n")
    }
}
