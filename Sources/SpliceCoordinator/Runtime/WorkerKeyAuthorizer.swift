import SpliceStore
import SpliceWire

/// Decides which worker keys the worker endpoint admits: enrolled and not revoked in the store;
/// an unknown key on probation where join tokens are in use.
/// The in-memory set (loaded at start, updated after each enroll/revoke commit) answers every
/// message; a handshake by a key it does not hold asks the store, so a key enrolled while the
/// coordinator runs is admitted. Anything that cannot be checked is refused (fail closed).
final class WorkerKeyAuthorizer: Authorizer {
    private let enrolled: EnrolledKeys
    private let repository: JobRepository

    init(enrolled: EnrolledKeys, repository: JobRepository) {
        self.enrolled = enrolled
        self.repository = repository
    }

    func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision {
        if enrolled.contains(request.publicKey) { return .allow }
        do {
            guard let worker = try await repository.worker(publicKey: request.publicKey.z85) else {
                // Where join tokens are in use, an unknown key may come in to present one (JOIN
                // alone: WireOptions.probationTypes); otherwise it is refused at the handshake.
                return try await repository.joinTokensInUse() ? .probation : .deny(reason: "key not enrolled")
            }
            guard worker.state != .revoked else { return .deny(reason: "key revoked") }
            enrolled.enroll(request.publicKey)
            return .allow
        } catch {
            return .deny(reason: "enrollment could not be checked")
        }
    }

    func isStillAuthorized(_ key: CurvePublicKey, domain: String) -> Bool {
        enrolled.contains(key)
    }
}
