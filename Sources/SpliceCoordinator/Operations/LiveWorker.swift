import Foundation
import SpliceWire

/// A worker session as the operators' endpoint shows it: the session snapshot plus the attempts
/// it holds, with their last PROGRESS.
struct LiveWorker: Sendable {
    struct Attempt: Sendable, Hashable {
        var attempt: SegmentAttempt
        /// 0…1, from its last PROGRESS.
        var fraction: Double
        /// Its COMPLETE or FAIL is being committed.
        var reported: Bool
        /// The segment's planned cost (0: unknown).
        var cost: Int64 = 0
    }

    var session: WorkerSessionSnapshot
    var attempts: [Attempt]

    /// Slots by what they do now: `busy` running an attempt, `idle` free for one, `quarantined`
    /// free but refused assignments, `unavailable` the worker is silent or not welcomed yet.
    var slotStates: [String: Int] {
        let busy = min(session.slots, attempts.filter { !$0.reported }.count)
        let free = session.slots - busy
        if !session.active || session.silent { return ["busy": busy, "unavailable": free] }
        if session.quarantineRemaining != nil { return ["busy": busy, "quarantined": free] }
        return ["busy": busy, "idle": free]
    }
}

extension CoordinatorStateMachine {
    /// Every session with the attempts it holds, ordered by name.
    func liveWorkers(now: ContinuousClock.Instant) -> [LiveWorker] {
        sessionSnapshots(now: now).map { snapshot in
            let held = sessions[snapshot.identity]?.held.values.map {
                LiveWorker.Attempt(attempt: $0.attempt, fraction: $0.fraction, reported: $0.reported, cost: $0.cost)
            } ?? []
            return LiveWorker(session: snapshot, attempts: held.sorted { $0.attempt.description < $1.attempt.description })
        }.sorted { ($0.session.name, $0.session.identity.description) < ($1.session.name, $1.session.identity.description) }
    }
}
