import Foundation
import SpliceWire
import Synchronization

/// Completed segments and their latencies, shared by the fake workers.
final class Tally: Sendable {
    private struct State {
        var latencies: [Duration] = []
        var first: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?
        var done: CheckedContinuation<Void, Never>?
        var stale = 0
    }

    let target: Int
    private let state = Mutex(State())

    init(target: Int) {
        self.target = target
    }

    func assigned(at instant: ContinuousClock.Instant) {
        state.withLock { $0.first = $0.first ?? instant }
    }

    func acknowledged(_ outcome: Ack.Outcome, latency: Duration, at instant: ContinuousClock.Instant) {
        let done = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard outcome == .accepted else {
                state.stale += 1
                return nil
            }
            state.latencies.append(latency)
            state.last = instant
            guard state.latencies.count == target else { return nil }
            defer { state.done = nil }
            return state.done
        }
        done?.resume()
    }

    func finished(within timeout: Duration) async -> Bool {
        let waiter = Task {
            await withCheckedContinuation { continuation in
                let already = state.withLock { state -> Bool in
                    if state.latencies.count >= target { return true }
                    state.done = continuation
                    return false
                }
                if already { continuation.resume() }
            }
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            let pending = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.done = nil }
                return state.done
            }
            pending?.resume()
        }
        await waiter.value
        timer.cancel()
        return state.withLock { $0.latencies.count >= target }
    }

    func summary(workers: Int) -> String {
        state.withLock { state in
            let sorted = state.latencies.sorted()
            guard let first = state.first, let last = state.last, !sorted.isEmpty else { return "  no segments completed" }
            let elapsed = last - first
            let seconds = elapsed / .seconds(1)
            func milliseconds(_ fraction: Double) -> String {
                let value = sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
                let ms = value / .milliseconds(1)
                return String(format: "%.2f", ms)
            }
            let rate = String(format: "%.0f", Double(sorted.count) / seconds)
            let span = String(format: "%.2f", seconds)
            let stale = state.stale > 0 ? "  (\(state.stale) stale)" : ""
            return "  \(workers) workers: \(rate) segments/s (\(sorted.count) in \(span) s)   "
                + "ASSIGN→COMPLETE→ACK p50 \(milliseconds(0.5)) ms  p99 \(milliseconds(0.99)) ms  "
                + "max \(milliseconds(1)) ms\(stale)"
        }
    }
}
