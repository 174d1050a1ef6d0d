import Foundation

/// The threads libcurl's blocking calls run on: up to `limit` of them, started as work arrives,
/// each with an easy handle of its own (and so its own kept-alive connection). Jobs wait in a
/// FIFO queue while all threads are busy. Never Swift's cooperative pool: a transfer blocks its
/// thread for as long as the network takes.
///
/// ``shutDown()`` lets the threads finish the queued jobs and exit.
final class TransferThreads: @unchecked Sendable {
    /// One unit of work, run on a transfer thread with that thread's handle (nil if libcurl
    /// could not create one; the job then reports the failure).
    typealias Job = @Sendable (CurlEasy?) -> Void

    private let limit: Int
    // Everything below is guarded by `condition`'s lock; hence @unchecked Sendable.
    private let condition = NSCondition()
    /// Jobs in order; a taken job's slot is set to nil at once, so that releasing a job (and
    /// whatever it captured, whose `deinit` may submit more work) never happens under the lock.
    private var queue: [Job?] = []
    private var queueHead = 0
    private var threads = 0
    private var idle = 0
    private var stopping = false

    init(limit: Int) {
        self.limit = limit
    }

    /// Queues `job`; starts a thread if none is idle and the limit allows.
    func submit(_ job: @escaping Job) {
        condition.lock()
        defer { condition.unlock() }
        queue.append(job)
        if idle > 0 { condition.signal() }
        if queue.count - queueHead > idle, threads < limit {
            threads += 1
            let thread = Thread { [self] in run() }
            thread.name = "splice-s3-\(threads)"
            thread.stackSize = 512 << 10
            thread.start()
        }
    }

    /// Lets the threads exit once the queue is empty.
    func shutDown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        let easy = CurlEasy()
        while let job = next() {
            job(easy)
        }
    }

    /// The next job, waiting for one; nil when shutting down with nothing left.
    private func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while queueHead == queue.count {
            if stopping {
                threads -= 1
                return nil
            }
            idle += 1
            condition.wait()
            idle -= 1
        }
        let job = queue[queueHead]
        queue[queueHead] = nil
        queueHead += 1
        if queueHead > 64, queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        return job!
    }
}
