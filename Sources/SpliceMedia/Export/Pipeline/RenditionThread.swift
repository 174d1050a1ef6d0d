internal import CFFmpeg
internal import CSpliceSystem
import Foundation

/// Encodes one ``VideoRendition`` on a thread of its own, fed converted pictures by the decoding
/// thread through a short queue, so that the rungs of a ladder encode side by side instead of one after another. A lane of a ladder then keeps more than one
/// core busy when there is one to spare — at the end of a job, when the other lanes have finished
/// — and on a worker with cores to spare for its one segment.
///
/// Failures on the thread come back to the decoding thread at its next ``submit(_:at:warmingUp:startsChunk:)``
/// or at ``waitForExit(checkCancelled:)``. ``stop()`` ends the thread without finishing
/// (a failed or cancelled run); the owner calls it before letting go.
final class RenditionThread: @unchecked Sendable {
    // The rendition is confined to the thread between `init` and its exit (``finish`` and
    // ``stop`` wait for that); everything below `condition` is guarded by its lock. Hence
    // @unchecked Sendable.
    let rendition: VideoRendition
    private let condition = NSCondition()
    private var queue: [Work] = []
    private var failure: MediaError?
    private var stopping = false
    private var exited = false
    private let tally: ThreadCPUTally?
    /// The thread's name as `ps -L` and `/proc` show it (at most 15 bytes).
    private let name: String

    /// Pictures waiting at most: enough to ride out the encoder's uneven cost from picture to
    /// picture (an IDR, a scene cut) without holding many full-size pictures in memory.
    static let depth = 4

    private enum Work {
        case picture(Frame, at: MediaTime, warmingUp: Bool, startsChunk: Bool)
        case finish(endSlot: Int64?)
    }

    /// `tally`: where the thread adds its CPU time as it exits.
    init(rendition: VideoRendition, name: String, tally: ThreadCPUTally?) {
        self.rendition = rendition
        self.tally = tally
        self.name = name
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Queues `picture` (a new reference to its buffers: the caller may reuse its frame), waiting
    /// while the queue is full; throws the thread's failure, if it had one.
    func submit(_ picture: Frame, at relative: MediaTime, warmingUp: Bool, startsChunk: Bool) throws(MediaError) {
        guard let clone = av_frame_clone(picture.pointer) else { throw MediaError(.internalError, "out of memory") }
        let work = Work.picture(Frame(owning: clone), at: relative, warmingUp: warmingUp, startsChunk: startsChunk)
        condition.lock()
        defer { condition.unlock() }
        while queue.count >= Self.depth && failure == nil && !exited {
            condition.wait()
        }
        if let failure { throw failure }
        guard !exited else { throw MediaError(.internalError, "a rendition's encoder thread ended early") }
        queue.append(work)
        condition.broadcast()
    }

    /// Lets the thread encode what is queued, flush its encoder up to `endSlot` and exit
    /// (``waitForExit(checkCancelled:)`` waits for that).
    func finish(endSlot: Int64?) {
        condition.lock()
        queue.append(.finish(endSlot: endSlot))
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until the thread has exited, calling `checkCancelled` every 50 ms (a cancel stops
    /// the thread and is thrown); throws the thread's failure, if it had one.
    func waitForExit(checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {
        condition.lock()
        while !exited {
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
            if exited { break }
            condition.unlock()
            do {
                try checkCancelled()
            } catch {
                stop()
                throw error
            }
            condition.lock()
        }
        let failure = self.failure
        condition.unlock()
        if let failure { throw failure }
    }

    /// Ends the thread without encoding what is queued, and waits until it has.
    func stop() {
        condition.lock()
        stopping = true
        queue.removeAll()
        condition.broadcast()
        while !exited { condition.wait() }
        condition.unlock()
    }

    private func run() {
        _ = splice_name_this_thread(name)
        while let work = next() {
            do throws(MediaError) {
                switch work {
                case .picture(let frame, let relative, let warmingUp, let startsChunk):
                    try rendition.encode(frame, at: relative, warmingUp: warmingUp, startsChunk: startsChunk)
                case .finish(let endSlot):
                    try rendition.finish(endSlot: endSlot) { [self] () throws(MediaError) in
                        if isStopping { throw MediaError.cancelled("a rendition's encoder") }
                    }
                    end(failure: nil)
                    return
                }
            } catch {
                end(failure: error)
                return
            }
        }
        end(failure: nil)
    }

    /// The next piece of work, waiting for one; nil once stopping.
    private func next() -> Work? {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty && !stopping { condition.wait() }
        guard !stopping else { return nil }
        let work = queue.removeFirst()
        condition.broadcast()
        return work
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    private func end(failure: MediaError?) {
        tally?.addCallingThread()
        condition.lock()
        if self.failure == nil { self.failure = failure }
        queue.removeAll()
        exited = true
        condition.broadcast()
        condition.unlock()
    }
}
