import Foundation
import SpliceCore
import SpliceWire

// The timer, and the two steps of a graceful shutdown.
extension CoordinatorStateMachine {
    /// The timer: HEARTBEAT to workers we have not written to for an interval; a worker silent for
    /// `heartbeatLiveness` intervals gets no new assignments and loses its leases at once (its
    /// segments run elsewhere; a late COMPLETE is refused by the fence); one silent for
    /// `forgetAfter` is forgotten. Assignments not accepted within `acceptDeadline` are taken
    /// back. Live workers are recorded as seen now and then. The one pass over every session.
    mutating func onTick(now: Instant) -> [CoordinatorDirective] {
        var directives: [CoordinatorDirective] = []
        // Time this process did not run (SIGSTOP, a starved machine) is nobody's silence: credit
        // it to every session before judging liveness, or one pause would release every lease.
        let paused = lastTick.map { now - $0 }.flatMap { $0 > policy.heartbeatInterval ? $0 : nil }
        lastTick = now
        versionRefusals.prune(now: now)
        var seen: [UUID] = []
        var gone: [UUID] = []
        for identity in Array(sessions.identities) {
            guard var session = sessions[identity] else { continue }
            if let paused { session.lastHeard = min(now, session.lastHeard + paused) }
            let silence = now - session.lastHeard
            if silence > policy.forgetAfter {
                sessions.close(identity)
                directives.append(.notice(.workerForgotten(identity)))
                if let workerID = session.workerID { gone.append(workerID) }
                continue
            }
            var becameSilent = false
            if !session.silent && silence > policy.silenceLimit {
                becameSilent = true
                directives.append(.notice(.workerSilent(identity)))
                if let workerID = session.workerID, session.isRunningSomething {
                    directives.append(.releaseWorker(
                        workerID: workerID, reason: "the worker fell silent (nothing heard for \(silence))"))
                }
            }
            var recordSeen = false
            if let workerID = session.workerID, !session.silent, !becameSilent,
               session.lastSeenRecorded.map({ now - $0 >= policy.seenInterval }) ?? true
            {
                recordSeen = true
                seen.append(workerID)
            }
            if paused != nil || becameSilent || recordSeen {
                sessions.update(identity) { stored in
                    stored.lastHeard = session.lastHeard
                    if becameSilent { stored.silent = true }
                    if recordSeen { stored.lastSeenRecorded = now }
                }
            }
            if session.phase == .active && now - session.lastSent >= policy.heartbeatInterval {
                directives += send(.heartbeat(Heartbeat()), to: identity, now: now)
            }
            directives += takeBackUnaccepted(identity, now: now)
        }
        if !seen.isEmpty { directives.append(.markWorkers(seen, online: true)) }
        if !gone.isEmpty { directives.append(.markWorkers(gone, online: false)) }
        return directives
    }

    /// Attempts ASSIGNed by this process and neither accepted nor answered within the accept
    /// deadline: the worker dropped the ASSIGN (or it never arrived). Hand them back and tell the
    /// worker to forget them, in case it is only late.
    private mutating func takeBackUnaccepted(_ identity: WorkerIdentity, now: Instant) -> [CoordinatorDirective] {
        guard let held = sessions[identity]?.held.values else { return [] }
        let late = held.filter { attempt in
            guard !attempt.accepted, !attempt.reported, let leasedAt = attempt.leasedAt else { return false }
            return now - leasedAt > policy.acceptDeadline
        }
        var directives: [CoordinatorDirective] = []
        for attempt in late.sorted(by: { $0.attempt.description < $1.attempt.description }) {
            sessions.drop(attempt.attempt.leaseToken, from: identity)
            directives.append(.notice(.notAccepted(identity, attempt.attempt)))
            directives.append(.abandonAttempt(
                attempt.attempt, reason: "the worker did not accept the assignment within \(policy.acceptDeadline)",
                spendsAttempt: true))
            directives += send(.cancel(Cancel(attempt: attempt.attempt, reason: .leaseLost)), to: identity, now: now)
        }
        return directives
    }

    /// The first step of a graceful shutdown: no more claims.
    mutating func stopDispatching() -> [CoordinatorDirective] {
        shuttingDown = true
        return []
    }

    /// The last step of a graceful shutdown, once in-flight commits are answered: every worker is
    /// told the coordinator is leaving (it keeps its results and reports them to the next one).
    mutating func onShutdown(now: Instant) -> [CoordinatorDirective] {
        guard !farewellSent else { return [] }
        shuttingDown = true
        farewellSent = true
        let farewell = CoordinatorMessage.disconnect(Disconnect(reason: .shutdown, detail: "the coordinator is stopping"))
        return Array(sessions.identities).flatMap { send(farewell, to: $0, now: now) }
    }
}
