import SpliceConcurrency
import SpliceDaemon

/// A loop that does one round of work, then waits for a wake-up or its interval: the planner,
/// the stitcher, the reaper, the janitor and the timers. A graceful shutdown cancels the current
/// round — its store calls stop retrying; a probe or a stitch already running on its thread
/// completes first — and stops.
final class LoopService: Service {
    let name: String
    private let interval: Duration
    private let wake: WakeSignal
    private let round: @Sendable () async -> Void
    private let stopping = Latch()
    private let stopped = Latch()
    private let rounds = StoppableTask()

    init(_ name: String, every interval: Duration, wake: WakeSignal = WakeSignal(),
         round: @escaping @Sendable () async -> Void) {
        self.name = name
        self.interval = interval
        self.wake = wake
        self.round = round
    }

    func run() async throws {
        defer { stopped.open() }
        while !stopping.isOpen && !Task.isCancelled {
            await rounds.run(round)
            guard !stopping.isOpen else { break }
            await wake.wait(upTo: interval)
        }
    }

    func shutdown() async {
        stopping.open()
        wake.signal()
        await rounds.stop()
        await stopped.wait()
    }
}
