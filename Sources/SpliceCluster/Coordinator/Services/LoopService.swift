/// A loop that does one round of work, then waits for a wake-up or its interval: the planner,
/// the stitcher, the reaper, the janitor and the timers. A graceful shutdown lets the current
/// round finish (a stitch in progress completes) and stops before the next one.
final class LoopService: Service {
    let name: String
    private let interval: Duration
    private let wake: WakeSignal
    private let round: @Sendable () async -> Void
    private let stopping = Latch()
    private let stopped = Latch()

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
            await round()
            guard !stopping.isOpen else { break }
            await wake.wait(upTo: interval)
        }
    }

    func shutdown() async {
        stopping.open()
        wake.signal()
        await stopped.wait()
    }
}
