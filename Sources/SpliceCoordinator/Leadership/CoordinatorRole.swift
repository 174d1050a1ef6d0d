import SpliceStore
import SpliceWire
import Synchronization

/// The part this coordinator plays now — the active one, with the ``CoordinatorTerm`` of the epoch
/// it holds, or a standby — and what it last read of the leadership. Every burst of worker
/// messages and every client request asks it, so it is a lock read, not an actor hop: the
/// dispatch path pays nothing for it.
final class CoordinatorRole: Sendable {
    private struct State {
        var term: CoordinatorTerm?
        /// The leadership row as last read (by the leadership loop), and when.
        var leader: LeaderLease.Record?
        var leaderReadAt: ContinuousClock.Instant?
        /// Terms this process has held.
        var terms = 0
        /// The epoch of this process's latest term (kept while it stands by, for the metrics).
        var lastEpoch: Int64?
    }

    private let state = Mutex(State())
    /// Answers workers while this coordinator stands by.
    let desk: StandbyDesk

    init(desk: StandbyDesk) {
        self.desk = desk
    }

    /// The active term, while this coordinator is the active one.
    var term: CoordinatorTerm? { state.withLock { $0.term } }

    /// The leadership row as last read; nil before the first read (or while the database does not
    /// answer a standby).
    var leader: LeaderLease.Record? { state.withLock { $0.leader } }

    /// Terms this process has held so far.
    var terms: Int { state.withLock { $0.terms } }

    /// The epoch this coordinator serves under while active; otherwise the active coordinator's
    /// as last read (0 when none is known).
    var epoch: Int64 {
        state.withLock { state in
            state.term?.epoch ?? state.leader?.active?.epoch ?? state.lastEpoch ?? 0
        }
    }

    /// The term now serves (its shell takes the worker messages from now on).
    func began(_ term: CoordinatorTerm) {
        state.withLock { state in
            state.term = term
            state.terms += 1
            state.lastEpoch = term.epoch
        }
    }

    /// The term has ended: worker messages go to the standby desk from now on.
    func ended(_ term: CoordinatorTerm) {
        state.withLock { state in
            if state.term === term { state.term = nil }
        }
    }

    /// What the leadership loop read.
    func read(_ leader: LeaderLease.Record?) {
        state.withLock { state in
            state.leader = leader
            state.leaderReadAt = .now
        }
    }

    /// A burst of worker messages: to the active term's shell, or to the standby desk.
    func received(_ batch: [Received<WorkerMessage>]) async {
        if let term = self.term {
            await term.shell.received(batch)
        } else {
            await desk.received(batch)
        }
    }
}
