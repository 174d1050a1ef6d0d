import Foundation
import SpliceCore
import SpliceLog
import SpliceStore
import SpliceWire
import Synchronization

/// Answers JOIN: a worker presents a join token with the key its CURVE handshake proved, and the
/// active coordinator enrolls that key (docs/deploy.md, Join tokens). The store decides in one
/// transaction — uses taken atomically, expiry and revocation enforced, the join or the refusal
/// appended to job_events — and this desk admits the key on the worker endpoint and answers
/// JOINED. A standby answers nothing (the worker asks every coordinator it knows until the active
/// one answers). Each JOIN is answered in a task of its own, a few at a time, so the worker
/// endpoint's reader never waits on the store for it.
final class JoinDesk: Sendable {
    private let endpoint: CoordinatorWorkerEndpoint
    private let role: CoordinatorRole
    private let enrolledKeys: EnrolledKeys?
    private let logger: Logger
    private let inFlight = Mutex(0)
    /// JOINs answered at once; more are dropped (the worker asks again).
    static let concurrentJoins = 8

    init(endpoint: CoordinatorWorkerEndpoint, role: CoordinatorRole, enrolledKeys: EnrolledKeys?, logger: Logger) {
        self.endpoint = endpoint
        self.role = role
        self.enrolledKeys = enrolledKeys
        self.logger = logger
    }

    /// Takes the JOINs out of `batch`; the rest goes on to the term or the standby desk.
    func screen(_ batch: [Received<WorkerMessage>]) -> [Received<WorkerMessage>] {
        batch.filter { received in
            guard case .message(let envelope, let peer) = received, case .join(let join) = envelope.message else {
                return true
            }
            answer(join, from: peer)
            return false
        }
    }

    private func answer(_ join: Join, from peer: WirePeer) {
        guard let key = peer.publicKey else {
            // Without CURVE every worker is admitted anyway: nothing to enroll.
            logger.warning("join refused", ["reason": "no-curve", "worker": join.workerName])
            send(Joined(outcome: .refused, reason: "no-curve",
                        detail: "this coordinator runs without CURVE keys: no join token is needed"), to: peer)
            return
        }
        guard let term = role.term else {
            logger.debug("join ignored by a standby coordinator", ["worker": key.z85])
            return
        }
        let admitted = inFlight.withLock { count -> Bool in
            guard count < Self.concurrentJoins else { return false }
            count += 1
            return true
        }
        guard admitted else { return }
        Task {
            defer { self.inFlight.withLock { $0 -= 1 } }
            let name = join.workerName.isEmpty ? "worker-\(key.z85.prefix(8))" : join.workerName
            let outcome: JoinOutcome
            do {
                outcome = try await term.repository.join(
                    tokenHash: JoinTokenSecret.hash(of: join.token), publicKey: key.z85, name: name)
            } catch {
                // The worker asks again; a store that does not answer refuses nobody for good.
                self.logger.warning("join could not be checked; the worker will ask again",
                                    ["worker": key.z85, "name": name, "error": "\(error)"])
                return
            }
            switch outcome {
            case .joined(_, let token):
                self.enrolledKeys?.enroll(key)
                self.logger.info("worker joined", ["worker": key.z85, "name": name, "token": token])
                self.send(Joined(outcome: .joined), to: peer)
            case .alreadyEnrolled:
                self.enrolledKeys?.enroll(key)
                self.logger.info("worker already enrolled; no join token use spent", ["worker": key.z85, "name": name])
                self.send(Joined(outcome: .alreadyEnrolled), to: peer)
            case .refused(let refusal):
                self.logger.warning("join refused", ["worker": key.z85, "name": name, "reason": refusal.rawValue])
                self.send(Joined(outcome: .refused, reason: refusal.rawValue, detail: refusal.explanation), to: peer)
            }
        }
    }

    private func send(_ joined: Joined, to peer: WirePeer) {
        let endpoint = self.endpoint
        let logger = self.logger
        Task {
            do {
                try await endpoint.send(.joined(joined), to: peer)
            } catch {
                logger.debug("JOINED not sent", ["peer": peer.description, "error": "\(error)"])
            }
        }
    }
}

/// Join tokens' text: `splj_` and 32 random bytes, base64url; the store keeps their SHA-256 only.
enum JoinTokenSecret {
    static let prefix = "splj_"

    /// A new token from the system's CSPRNG.
    static func generate() -> String {
        prefix + TokenAuthority.generate().dropFirst(TokenAuthority.prefix.count)
    }

    /// `sha256:` + the hex SHA-256 of the token's text.
    static func hash(of token: String) -> SHA256Digest {
        TokenAuthority.hash(of: token)
    }
}
