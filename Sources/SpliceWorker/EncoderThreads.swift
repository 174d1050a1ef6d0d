internal import Synchronization

/// How many threads each of a worker's encodes gets for its decoder and encoders (FFmpeg's
/// `thread_count`): the usable cores ÷ slots, at least 1 (``perSlot``, what `splice workers` and
/// `/metrics` show), and every usable core for an encode that finds itself alone when its encoder
/// opens — no other encode running and no ASSIGN waiting to be handled — as `splice transcode`'s
/// lanes give a segment started with lanes idle their threads. `--codec-threads` fixes the
/// number for every encode.
///
/// "Alone" is judged when the encoder opens, not when the ASSIGN arrives: a coordinator fills a
/// worker's free slots in one round, and the first of those ASSIGNs must not take every core a
/// moment before the others arrive. An encode that did take every core keeps them until it ends,
/// so encodes started meanwhile run the machine with up to twice as many threads as cores.
final class EncoderThreads: Sendable {
    private struct State {
        /// Encodes started and not yet ended (an aborted one counts until it has stopped).
        var running = 0
        /// ASSIGNs received and not yet handled by the daemon's loop.
        var queuedAssigns = 0
    }

    /// The cores this process may use (``UsableCores/count``).
    let usableCores: Int
    let slots: Int
    /// `--codec-threads`: every encode gets this many, alone or not.
    let fixed: Int?
    private let state = Mutex(State())

    init(usableCores: Int, slots: Int, fixed: Int?) {
        self.usableCores = max(1, usableCores)
        self.slots = max(1, slots)
        self.fixed = fixed
    }

    /// Threads per encode while every slot is busy.
    var perSlot: Int { fixed ?? max(1, usableCores / slots) }

    /// An ASSIGN arrived; the daemon's loop has yet to handle it.
    func assignQueued() { state.withLock { $0.queuedAssigns += 1 } }

    /// The daemon's loop took an ASSIGN up (whether it starts an encode or not).
    func assignHandled() { state.withLock { $0.queuedAssigns = max(0, $0.queuedAssigns - 1) } }

    func encodeStarted() { state.withLock { $0.running += 1 } }

    func encodeEnded() { state.withLock { $0.running = max(0, $0.running - 1) } }

    /// The threads for a started encode whose encoder opens now.
    func forOpeningEncoder() -> Int {
        if let fixed { return fixed }
        let alone = state.withLock { $0.running <= 1 && $0.queuedAssigns == 0 }
        return alone ? usableCores : perSlot
    }
}
