import Foundation
import Synchronization
import Testing

@testable import SpliceConcurrency

@Suite("WakeSignal")
struct WakeSignalTests {
    @Test("a signal before the wait is remembered, once, however many came")
    func rememberedOnce() async {
        let wake = WakeSignal()
        wake.signal()
        wake.signal()
        let start = clock.now
        await wake.wait(upTo: long)
        #expect(clock.now - start < .seconds(30))
        let again = clock.now
        await wake.wait(upTo: .milliseconds(50))
        #expect(clock.now - again >= .milliseconds(50), "the second wait should time out: signals do not count")
    }

    @Test("a signal wakes every task waiting")
    func wakesWaiters() async {
        let wake = WakeSignal()
        let start = clock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { await wake.wait(upTo: long) } }
            group.addTask {
                // Until all three are woken: a signal sent before they wait is taken by one only.
                while !Task.isCancelled {
                    wake.signal()
                    try? await Task.sleep(for: .milliseconds(5))
                }
            }
            for _ in 0..<3 { await group.next() }
            group.cancelAll()
        }
        #expect(clock.now - start < .seconds(30))
    }

    @Test("without a signal the wait ends at the timeout")
    func timeout() async {
        let start = clock.now
        await WakeSignal().wait(upTo: .milliseconds(30))
        #expect(clock.now - start >= .milliseconds(30))
    }

    @Test("cancelling the waiting task ends the wait, and the signal is not used up")
    func cancellation() async {
        let wake = WakeSignal()
        let start = clock.now
        let waiting = Task { await wake.wait(upTo: long) }
        waiting.cancel()
        await waiting.value
        #expect(clock.now - start < .seconds(30))
        wake.signal()
        await wake.wait(upTo: long)
        #expect(clock.now - start < .seconds(30))
    }
}

@Suite("WakePipe")
struct WakePipeTests {
    private func isReadable(_ pipe: WakePipe) -> Bool {
        var entry = pollfd(fd: pipe.fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
    }

    @Test("signal makes the descriptor readable until drained; signals coalesce")
    func signalAndDrain() throws {
        let pipe = try WakePipe()
        #expect(!isReadable(pipe))
        pipe.signal()
        #expect(isReadable(pipe))
        pipe.drain()
        #expect(!isReadable(pipe))
        // More signals than the pipe holds: the extra writes fail quietly, one drain clears them.
        for _ in 0..<100_000 { pipe.signal() }
        #expect(isReadable(pipe))
        pipe.drain()
        #expect(!isReadable(pipe))
    }

    @Test("a signal from another thread wakes a thread blocked in poll")
    func wakesPoll() async throws {
        let pipe = try WakePipe()
        let woken = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let thread = Thread {
                var entry = pollfd(fd: pipe.fd, events: Int16(POLLIN), revents: 0)
                continuation.resume(returning: poll(&entry, 1, 60_000) == 1)
            }
            thread.start()
            pipe.signal()
        }
        #expect(woken)
    }
}

@Suite("Latch")
struct LatchTests {
    @Test("opening wakes every waiter, and later waits return at once")
    func opensForAll() async {
        let latch = Latch()
        #expect(!latch.isOpen)
        let start = clock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { await latch.wait() } }
            group.addTask { latch.open() }
            await group.waitForAll()
        }
        #expect(latch.isOpen)
        latch.open()
        await latch.wait()
        #expect(clock.now - start < .seconds(30))
    }

    @Test("a cancelled waiter returns while the latch stays shut")
    func cancellation() async {
        let latch = Latch()
        let waiting = Task { await latch.wait() }
        waiting.cancel()
        await waiting.value
        #expect(!latch.isOpen)
    }
}
