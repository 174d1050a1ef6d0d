import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing

/// Join tokens in the store: uses taken atomically, expiry and revocation enforced, every join and
/// refusal in job_events; and `workers prune`.
@Suite struct JoinTokenTests {
    private func hash(_ token: String) -> SHA256Digest {
        SHA256Digest(bytes: SHA256.digest(of: Array(token.utf8)))!
    }

    private func events(_ store: StoreFixture, _ kind: String) async throws -> [String] {
        try await store.query("SELECT detail FROM job_events WHERE kind = \(kind) ORDER BY id")
            .map { try $0.decode(String.self, column: "detail") }
    }

    @Test func aTokenEnrollsAsManyKeysAsItHasUsesAndSaysWhyItRefuses() async throws {
        let store = try await StoreFixture()
        #expect(try await store.repository.joinTokensInUse() == false)
        let token = try await store.repository.createJoinToken(name: "pods", tokenHash: hash("splj_a"), uses: 2,
                                                               lifetime: .seconds(3600))
        #expect(token.usesLeft == 2 && token.uses == 2)
        #expect(try await store.repository.joinTokensInUse())

        guard case .joined(let first, token: "pods") = try await store.repository.join(
            tokenHash: hash("splj_a"), publicKey: "key-1", name: "w1") else { Issue.record("key-1 not joined"); return }
        #expect(first.publicKey == "key-1" && first.state != .revoked)
        // Already enrolled: no use spent.
        guard case .alreadyEnrolled = try await store.repository.join(
            tokenHash: hash("splj_a"), publicKey: "key-1", name: "w1") else { Issue.record("not recognised"); return }
        #expect(try await store.repository.joinTokens().first?.usesLeft == 1)
        guard case .joined = try await store.repository.join(tokenHash: hash("splj_a"), publicKey: "key-2", name: "w2")
        else { Issue.record("key-2 not joined"); return }
        #expect(try await store.repository.join(tokenHash: hash("splj_a"), publicKey: "key-3", name: "w3")
            == .refused(.usedUp))
        #expect(try await store.repository.join(tokenHash: hash("splj_wrong"), publicKey: "key-3", name: "w3")
            == .refused(.unknownToken))
        #expect(try await store.repository.worker(publicKey: "key-3") == nil, "a refused key is not enrolled")

        _ = try await store.repository.createJoinToken(name: "short", tokenHash: hash("splj_b"), uses: 5,
                                                       lifetime: .seconds(3600))
        try await store.query("UPDATE join_tokens SET expires_at = now() - interval '1 second' WHERE name = 'short'")
        #expect(try await store.repository.join(tokenHash: hash("splj_b"), publicKey: "key-3", name: "w3")
            == .refused(.expired))
        _ = try await store.repository.createJoinToken(name: "gone", tokenHash: hash("splj_c"), uses: 5,
                                                       lifetime: .seconds(3600))
        #expect(try await store.repository.revokeJoinToken(named: "gone")?.revokedAt != nil)
        #expect(try await store.repository.join(tokenHash: hash("splj_c"), publicKey: "key-3", name: "w3")
            == .refused(.revoked))
        // A revoked key cannot come back through a token either.
        let second = try #require(try await store.repository.worker(publicKey: "key-2"))
        _ = try await store.repository.revokeWorker(id: second.id)
        _ = try await store.repository.createJoinToken(name: "more", tokenHash: hash("splj_d"), uses: 5,
                                                       lifetime: .seconds(3600))
        #expect(try await store.repository.join(tokenHash: hash("splj_d"), publicKey: "key-2", name: "w2")
            == .refused(.keyRevoked))
        #expect(try await store.repository.joinTokens().first { $0.name == "more" }?.usesLeft == 5)

        #expect(try await events(store, "worker_joined").count == 2)
        let refusals = try await events(store, "worker_join_refused")
        #expect(refusals.map { $0.split(separator: " ").last ?? "" } == [
            "reason=used-up", "reason=unknown-token", "reason=expired", "reason=revoked", "reason=key-revoked",
        ])
        #expect(refusals[0].contains("key=key-3 token=pods"))
    }

    @Test func theLastUseGoesToOneWorkerOnly() async throws {
        let store = try await StoreFixture(connections: 8)
        _ = try await store.repository.createJoinToken(name: "one", tokenHash: hash("splj_one"), uses: 1,
                                                       lifetime: .seconds(3600))
        let outcomes = try await withThrowingTaskGroup(of: JoinOutcome.self) { group in
            for index in 0..<6 {
                group.addTask {
                    try await store.repository.join(tokenHash: self.hash("splj_one"), publicKey: "race-\(index)",
                                                    name: "w\(index)")
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let joined = outcomes.filter { if case .joined = $0 { true } else { false } }
        #expect(joined.count == 1)
        #expect(outcomes.filter { $0 == .refused(.usedUp) }.count == 5)
    }

    /// A worker asks again while its first JOIN may still be on the way (docs/protocol.md): both
    /// can reach the store at once. The key joins once, the other ask hears it is enrolled — not
    /// "used-up" for the use its own first ask just took — and nothing is refused in job_events.
    @Test func oneKeyAskingTwiceAtOnceJoinsOnceAndIsNotRefused() async throws {
        let store = try await StoreFixture(connections: 8)
        for round in 0..<8 {
            _ = try await store.repository.createJoinToken(name: "twice-\(round)", tokenHash: hash("splj_t\(round)"),
                                                           uses: 1, lifetime: .seconds(3600))
            let outcomes = try await withThrowingTaskGroup(of: JoinOutcome.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await store.repository.join(tokenHash: self.hash("splj_t\(round)"),
                                                        publicKey: "eager-\(round)", name: "eager-\(round)")
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let joined = outcomes.filter { if case .joined = $0 { true } else { false } }
            let known = outcomes.filter { if case .alreadyEnrolled = $0 { true } else { false } }
            #expect(joined.count == 1 && known.count == 1, "round \(round): \(outcomes)")
        }
        #expect(try await events(store, "worker_join_refused").isEmpty)
        #expect(try await events(store, "worker_joined").count == 8)

        // A refused key asking twice at once (and once more) is one refusal in the log; another
        // reason for the same key is another.
        let asks = try await withThrowingTaskGroup(of: JoinOutcome.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await store.repository.join(tokenHash: self.hash("splj_t0"), publicKey: "late", name: "late")
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(asks == Array(repeating: .refused(.usedUp), count: 3))
        #expect(try await store.repository.join(tokenHash: hash("splj_none"), publicKey: "late", name: "late")
            == .refused(.unknownToken))
        #expect(try await events(store, "worker_join_refused") == [
            "key=late token=twice-0 reason=used-up", "key=late token=- reason=unknown-token",
        ])
    }

    @Test func pruneRevokesOnlyWorkersGoneLongerThanTheCutoff() async throws {
        let store = try await StoreFixture()
        let gone = try await store.makeWorker("gone")
        let recent = try await store.makeWorker("recent")
        _ = try await store.repository.workerSeen(id: gone.id, state: .offline)
        _ = try await store.repository.workerSeen(id: recent.id, state: .online)
        try await store.query("""
            UPDATE workers SET last_seen_at = now() - interval '2 days', enrolled_at = now() - interval '3 days'
            WHERE id = \(gone.id)
            """)
        let dry = try await store.repository.pruneWorkers(notSeenFor: .seconds(86_400), dryRun: true)
        #expect(dry.map(\.name) == ["gone"])
        #expect(try await store.repository.worker(publicKey: gone.publicKey)?.state != .revoked)
        let pruned = try await store.repository.pruneWorkers(notSeenFor: .seconds(86_400), dryRun: false)
        #expect(pruned.map(\.name) == ["gone"] && pruned.allSatisfy { $0.state == .revoked })
        #expect(try await store.repository.worker(publicKey: recent.publicKey)?.state == .online)
        #expect(try await store.repository.pruneWorkers(notSeenFor: .seconds(86_400), dryRun: false).isEmpty)
    }
}
