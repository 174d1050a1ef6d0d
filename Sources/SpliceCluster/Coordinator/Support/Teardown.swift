import Synchronization

/// What a starting coordinator has opened, to close in reverse order — after a graceful
/// shutdown, after cancellation, or when a later step of starting fails. Runs once.
final class Teardown: Sendable {
    /// How the coordinator is ending.
    enum Ending: Sendable, Hashable {
        /// A graceful shutdown: drain, linger, stop what was started.
        case graceful
        /// Cancellation (as close to a crash as a process gets): close without linger and leave
        /// what a restart reuses (the embedded PostgreSQL).
        case abrupt
        /// Starting failed part-way: close without linger and stop everything that was started,
        /// so a failed start leaves nothing running.
        case startFailed

        var lingers: Bool { self == .graceful }
    }

    typealias Step = @Sendable (_ ending: Ending) async -> Void
    private let steps = Mutex<[Step]?>([])

    init() {}

    func add(_ step: @escaping Step) {
        steps.withLock { $0?.append(step) }
    }

    func run(_ ending: Ending) async {
        let taken = steps.withLock { steps -> [Step] in
            defer { steps = nil }
            return steps ?? []
        }
        for step in taken.reversed() { await step(ending) }
    }
}
