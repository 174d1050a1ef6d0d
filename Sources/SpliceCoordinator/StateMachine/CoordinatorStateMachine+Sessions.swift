import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceWire

// Registering, welcoming, hearing from and forgetting workers.
extension CoordinatorStateMachine {
    mutating func onHello(_ hello: Hello, identity: WorkerIdentity, peer: WirePeer, now: Instant)
        -> [CoordinatorDirective]
    {
        guard hello.slots > 0 else {
            let detail = "HELLO must offer at least one slot, not \(hello.slots)"
            return [
                .notice(.invalidHello(identity, detail: detail)),
                .send(.disconnect(Disconnect(reason: .protocolError, detail: detail)), to: peer, worker: identity),
            ]
        }
        var directives: [CoordinatorDirective] = []
        if let existing = sessions[identity] {
            // A HELLO resent while the first is being registered changes nothing.
            if existing.phase == .registering { return heard(identity, peer: peer, now: now) }
            // The same HELLO again crossed our WELCOME (workers resend HELLO until WELCOME
            // arrives): welcome it again, and keep what was assigned since.
            if existing.registration == hello { return heard(identity, peer: peer, now: now) + welcome(identity, now: now) }
            // The worker registers again (it restarted, or lost us for a while). What it no longer
            // mentions it does not have: hand those attempts back now instead of at lease expiry.
            let mentioned = Set(hello.running.map(\.leaseToken) + hello.finished.map(\.attempt.leaseToken)
                + hello.failed.map(\.attempt.leaseToken))
            for held in existing.held.values.sorted(by: { $0.attempt.description < $1.attempt.description })
            where !mentioned.contains(held.attempt.leaseToken) {
                directives.append(.notice(.orphanedAttempt(identity, held.attempt)))
                directives.append(.abandonAttempt(
                    held.attempt, reason: "the worker registered again without it", spendsAttempt: true))
            }
        }
        incarnations += 1
        sessions.open(WorkerSession(identity: identity, incarnation: incarnations, peer: peer, hello: hello, now: now))
        directives.append(.notice(.workerRegistering(identity, name: hello.workerName, slots: hello.slots)))
        directives.append(.registerWorker(identity, name: hello.workerName, slots: hello.slots, encoders: hello.encoders))
        return directives
    }

    /// The store knows the worker (row `workerID`): commit what its HELLO holds, check what it
    /// runs, and WELCOME it once that is done.
    mutating func onWorkerRegistered(_ identity: WorkerIdentity, workerID: UUID, now: Instant) -> [CoordinatorDirective] {
        guard let session = sessions[identity], session.phase == .registering, let hello = session.pendingHello else {
            return []
        }
        sessions.update(identity) {
            $0.workerID = workerID
            $0.pendingHello = nil
        }
        var directives: [CoordinatorDirective] = []
        var outstanding = 0
        for result in hello.finished.map(WorkerResult.complete) + hello.failed.map(WorkerResult.fail) {
            let submitted = submit(result, from: identity, fromHello: true, now: now)
            directives += submitted.directives
            if submitted.awaitingCommit { outstanding += 1 }
        }
        let running = hello.running.filter { session.held[$0.leaseToken] != nil }
        if !running.isEmpty {
            directives.append(.extendLeases(running, worker: identity, check: .helloRunning(incarnation: session.incarnation)))
            outstanding += 1
        }
        sessions.update(identity) { $0.pendingHelloWork += outstanding }
        return directives + welcomeIfReady(identity, now: now)
    }

    /// The worker may not register (its key is unknown or revoked): tell it and forget it.
    mutating func onWorkerRefused(_ identity: WorkerIdentity, reason: String) -> [CoordinatorDirective] {
        guard let session = sessions.close(identity) else { return [] }
        return [
            .notice(.workerRefused(identity, reason: reason)),
            .send(.disconnect(Disconnect(reason: .revoked, detail: reason)), to: session.peer, worker: identity),
        ]
    }

    /// Registering failed (the store was unreachable): forget the session; the worker resends
    /// HELLO until it is welcomed.
    mutating func onRegistrationFailed(_ identity: WorkerIdentity) -> [CoordinatorDirective] {
        if sessions[identity]?.phase == .registering { sessions.close(identity) }
        return []
    }

    /// The key was revoked; the shell has already cut off its connections.
    mutating func onWorkerRevoked(_ identity: WorkerIdentity) -> [CoordinatorDirective] {
        guard sessions.close(identity) != nil else { return [] }
        return [.notice(.workerRefused(identity, reason: "key revoked"))]
    }

    mutating func onDisconnect(_ disconnect: Disconnect, identity: WorkerIdentity) -> [CoordinatorDirective] {
        guard let session = sessions.close(identity) else { return [] }
        var directives: [CoordinatorDirective] = [.notice(.workerLeft(identity, reason: disconnect.reason))]
        if let workerID = session.workerID {
            let reason = disconnect.detail.isEmpty
                ? "the worker disconnected (\(disconnect.reason.rawValue))"
                : "the worker disconnected (\(disconnect.reason.rawValue)): \(disconnect.detail)"
            directives.append(.releaseWorker(workerID: workerID, reason: reason))
            directives.append(.markWorkers([workerID], online: false))
        }
        return directives
    }

    /// Notes that `identity` spoke: refreshes liveness and its return address.
    mutating func heard(_ identity: WorkerIdentity, peer: WirePeer, now: Instant) -> [CoordinatorDirective] {
        let wasSilent = sessions.update(identity) { session -> Bool in
            session.lastHeard = now
            session.peer = peer
            defer { session.silent = false }
            return session.silent
        }
        return wasSilent == true ? [.notice(.workerBack(identity))] : []
    }

    /// One of a HELLO's commits or checks is done; WELCOME when none is left.
    mutating func helloWorkDone(_ identity: WorkerIdentity, incarnation: UInt64, now: Instant) -> [CoordinatorDirective] {
        guard let session = sessions[identity], session.incarnation == incarnation, session.phase == .registering else {
            return []
        }
        sessions.update(identity) { $0.pendingHelloWork -= 1 }
        return welcomeIfReady(identity, now: now)
    }

    private mutating func welcomeIfReady(_ identity: WorkerIdentity, now: Instant) -> [CoordinatorDirective] {
        guard let session = sessions[identity], session.phase == .registering, session.pendingHello == nil,
            session.pendingHelloWork <= 0, let workerID = session.workerID
        else { return [] }
        sessions.update(identity) { $0.phase = .active }
        return [.notice(.workerWelcomed(identity, workerID: workerID, running: session.held.count))]
            + welcome(identity, now: now)
    }

    private mutating func welcome(_ identity: WorkerIdentity, now: Instant) -> [CoordinatorDirective] {
        let welcome = Welcome(
            session: sessionName, heartbeatIntervalMilliseconds: policy.heartbeatInterval.wholeMilliseconds,
            heartbeatLiveness: policy.heartbeatLiveness, epoch: epoch)
        return send(.welcome(welcome), to: identity, now: now)
    }
}
