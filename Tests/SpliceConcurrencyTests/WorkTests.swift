import Synchronization
import Testing

@testable import SpliceConcurrency

@Suite("InFlightWork")
struct InFlightWorkTests {
    @Test("drained returns at once when nothing was started")
    func idle() async {
        #expect(await InFlightWork().drained(within: long))
    }

    @Test("drained waits for counted work, and for the work it started before finishing")
    func waitsForWork() async {
        let work = InFlightWork()
        let first = Latch()
        let second = Latch()
        work.start {
            await first.wait()
            work.start { await second.wait() }
        }
        #expect(await work.drained(within: .milliseconds(30)) == false)
        first.open()
        #expect(await work.drained(within: .milliseconds(30)) == false, "the nested work still runs")
        second.open()
        #expect(await work.drained(within: long))
    }

    @Test("a cancelled drained() returns while work still runs")
    func cancellation() async {
        let work = InFlightWork()
        let hold = Latch()
        work.start { await hold.wait() }
        let start = clock.now
        let waiting = Task { await work.drained() }
        waiting.cancel()
        await waiting.value
        #expect(clock.now - start < .seconds(30))
        hold.open()
        #expect(await work.drained(within: long))
    }
}

@Suite("StoppableTask")
struct StoppableTaskTests {
    @Test("stop cancels the body and returns once it has returned")
    func stopWaitsForBody() async throws {
        let stoppable = StoppableTask()
        let started = Latch()
        let finished = Mutex(false)
        let running = Task {
            await stoppable.run {
                started.open()
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                finished.withLock { $0 = true }
            }
        }
        await started.wait()
        await stoppable.stop()
        #expect(finished.withLock { $0 })
        await running.value
    }

    @Test("after stop, a later run is cancelled from the start")
    func stopBeforeRun() async {
        let stoppable = StoppableTask()
        await stoppable.stop()
        let sawCancellation = Mutex(false)
        await stoppable.run {
            try? await Task.sleep(for: long)
            sawCancellation.withLock { $0 = Task.isCancelled }
        }
        #expect(sawCancellation.withLock { $0 })
    }

    @Test("cancelling the caller cancels the body")
    func callerCancellation() async {
        let stoppable = StoppableTask()
        let start = clock.now
        let running = Task { await stoppable.run { try? await Task.sleep(for: long) } }
        running.cancel()
        await running.value
        #expect(clock.now - start < .seconds(30))
    }
}

@Suite("Teardown")
struct TeardownTests {
    @Test("steps run last first, with the ending, once; a step added after is ignored")
    func reverseOrderOnce() async {
        let teardown = Teardown<String>()
        let log = Mutex<[String]>([])
        for name in ["database", "context", "endpoint"] {
            teardown.add { ending in log.withLock { $0.append(name + ":" + ending) } }
        }
        await teardown.run("graceful")
        await teardown.run("abrupt")
        teardown.add { ending in log.withLock { $0.append("late:" + ending) } }
        await teardown.run("abrupt")
        #expect(log.withLock { $0 } == ["endpoint:graceful", "context:graceful", "database:graceful"])
    }
}

@Suite("withDeadline")
struct DeadlineTests {
    @Test("the operation's value when it finishes first")
    func value() async {
        #expect(await withDeadline(long) { 7 } == 7)
        #expect(await withDeadline(long) { () async -> Int? in nil } == nil)
    }

    @Test("nil at the deadline, and the operation is cancelled")
    func expiry() async {
        let cancelled = Mutex(false)
        let start = clock.now
        let value = await withDeadline(.milliseconds(30)) { () async -> Int? in
            try? await Task.sleep(for: long)
            cancelled.withLock { $0 = Task.isCancelled }
            return 1
        }
        #expect(value == nil)
        #expect(cancelled.withLock { $0 })
        #expect(clock.now - start >= .milliseconds(30) && clock.now - start < .seconds(30))
    }
}

@Suite("value(of:within:)")
struct UnjoinedDeadlineTests {
    @Test("the task's value when it finishes in time")
    func value() async {
        #expect(await SpliceConcurrency.value(of: Task { 7 }, within: long) == 7)
    }

    @Test("nil at the deadline without waiting for the task, which goes on and can be awaited again")
    func expiry() async {
        let gate = Latch()
        let task = Task { () -> Int in
            await gate.wait()
            return 9
        }
        let start = clock.now
        #expect(await SpliceConcurrency.value(of: task, within: .milliseconds(30)) == nil)
        #expect(clock.now - start < .seconds(10))
        #expect(!task.isCancelled)
        gate.open()
        #expect(await task.value == 9)
    }
}

@Suite("Duration in whole units")
struct DurationTests {
    @Test("whole milliseconds truncate toward zero", arguments: [
        (Duration.zero, 0),
        (.milliseconds(1_500), 1_500),
        (.seconds(2) + .microseconds(999), 2_000),
        (.microseconds(1_999), 1),
        (.microseconds(-1_999), -1),
        (.microseconds(-1_500), -1),
        (.nanoseconds(999_999), 0),
        (.seconds(-3), -3_000),
    ])
    func milliseconds(duration: Duration, expected: Int) {
        #expect(duration.wholeMilliseconds == expected)
    }

    @Test("huge durations saturate instead of trapping")
    func saturation() {
        #expect(Duration.seconds(Int64.max).wholeMilliseconds == .max)
        #expect(Duration.seconds(Int64.min).wholeMilliseconds == .min)
        // The seconds fit once scaled, the fraction added on top does not.
        #expect((Duration.seconds(Int64.max / 1_000) + .milliseconds(999)).wholeMilliseconds == .max)
        #expect((Duration.seconds(Int64.min / 1_000) - .milliseconds(999)).wholeMilliseconds == .min)
        #expect(Duration.seconds(Int64.max).wholeNanoseconds == .max)
    }

    @Test("microseconds and nanoseconds")
    func otherUnits() {
        #expect(Duration.milliseconds(1_500).wholeMicroseconds == 1_500_000)
        #expect(Duration.nanoseconds(-1_999).wholeMicroseconds == -1)
        #expect(Duration.seconds(-2).wholeNanoseconds == -2_000_000_000)
        #expect(Duration.nanoseconds(123).wholeNanoseconds == 123)
    }
}
