import Synchronization

/// What a starting coordinator has opened, to close in reverse order — after a graceful
/// shutdown, after cancellation, or when a later step of starting fails. Runs once.
final class Teardown: Sendable {
    typealias Step = @Sendable (_ graceful: Bool) async -> Void
    private let steps = Mutex<[Step]?>([])

    init() {}

    func add(_ step: @escaping Step) {
        steps.withLock { $0?.append(step) }
    }

    func run(graceful: Bool) async {
        let taken = steps.withLock { steps -> [Step] in
            defer { steps = nil }
            return steps ?? []
        }
        for step in taken.reversed() { await step(graceful) }
    }
}
