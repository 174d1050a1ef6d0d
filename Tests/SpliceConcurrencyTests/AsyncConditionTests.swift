import Synchronization
import Testing

@testable import SpliceConcurrency

/// Generous bounds: these tests share two cores with builds, and a bound is only a failure signal.
let long = Duration.seconds(60)
let clock = ContinuousClock()

@Suite("AsyncCondition")
struct AsyncConditionTests {
    @Test("a waiter whose condition holds already returns its value at once")
    func readyAtOnce() async {
        let condition = AsyncCondition<Int, String>(7)
        let value = await condition.wait(orIfCancelled: "cancelled") { $0 == 7 ? "seven" : nil }
        #expect(value == "seven")
    }

    @Test("resumeAll hands every waiting task the value")
    func resumeAllWakesEveryWaiter() async throws {
        let condition = AsyncCondition<Int, Int>(0)
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<3 {
                // `ready` counts arrivals under the lock that then keeps the waiter.
                group.addTask { await condition.wait(orIfCancelled: -1) { arrivals in arrivals += 1; return nil } }
            }
            while condition.withLock({ $0 }) < 3 { try await Task.sleep(for: .milliseconds(1)) }
            condition.resumeAll { _, waiting in waiting ? 42 : nil }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(values == [42, 42, 42])
    }

    @Test("a cancelled waiter gets the cancelled value and is forgotten")
    func cancellation() async {
        let condition = AsyncCondition<Bool, Int>(false)
        let waiting = Task { await condition.wait(orIfCancelled: -1) { $0 ? 1 : nil } }
        waiting.cancel()
        #expect(await waiting.value == -1)
        // A later resume finds no stale continuation to resume twice.
        condition.resumeAll { ready, waiting in
            ready = true
            return waiting ? 2 : nil
        }
        #expect(await condition.wait(orIfCancelled: -1) { $0 ? 1 : nil } == 1)
    }

    @Test("a task cancelled before it waits returns at once")
    func cancelledBeforeWaiting() async {
        let condition = AsyncCondition<Void, Void>(())
        let waiting = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await condition.wait { _ in false }
            return Task.isCancelled
        }
        #expect(await waiting.value)
    }
}
