import Synchronization

/// What a starting component has opened, to close in reverse order — after a graceful shutdown,
/// after cancellation, or when a later step of starting fails. `Ending` says which (the
/// coordinator's: graceful, abrupt, start failed), and each step decides what it means for its
/// resource. Runs once: a second ``run(_:)`` does nothing, and a step added after the first is
/// ignored.
package final class Teardown<Ending: Sendable>: Sendable {
    /// Closes one resource, knowing how the component is ending.
    package typealias Step = @Sendable (_ ending: Ending) async -> Void
    /// The steps in the order they were added; nil once run.
    private let steps = Mutex<[Step]?>([])

    package init() {}

    /// Adds the step that closes what was just opened.
    package func add(_ step: @escaping Step) {
        steps.withLock { $0?.append(step) }
    }

    /// Runs every step, last added first, once.
    package func run(_ ending: Ending) async {
        let taken = steps.withLock { steps -> [Step] in
            defer { steps = nil }
            return steps ?? []
        }
        for step in taken.reversed() { await step(ending) }
    }
}
