import Foundation
import SpliceCore
import SpliceStore
import Synchronization

/// Who a bearer token is: the stored record, its roots resolved.
struct TokenIdentity: Sendable {
    var record: APITokenRecord
    var inputRoots: PathRoots
    var outputRoots: PathRoots
}

/// Checks the HTTP API's bearer tokens against the store: the presented token's SHA-256 looked up
/// (the token itself is never stored, logged or kept), the stored hash compared again in constant
/// time, revoked and expired tokens refused. A token once read is remembered for a few seconds, so
/// the store is not asked on every request; revoking one through this coordinator forgets it at
/// once, through another within the few seconds.
final class TokenAuthority: Sendable {
    /// How a request's credentials came out.
    enum Verdict: Sendable {
        case valid(TokenIdentity)
        /// No `Authorization: Bearer …`.
        case missing
        /// Unknown, revoked or expired, or malformed.
        case invalid(String)
        /// The store cannot tell now.
        case unavailable
    }

    private let repository: JobRepository
    private let cache = Mutex<[SHA256Digest: (identity: TokenIdentity, at: ContinuousClock.Instant)]>([:])
    static let cacheAge: Duration = .seconds(5)
    /// The prefix every token carries (greppable when one leaks).
    static let prefix = "spl_"

    init(repository: JobRepository) {
        self.repository = repository
    }

    /// The verdict on `authorization` (the header's value, if any).
    func verify(_ authorization: String?) async -> Verdict {
        guard let authorization else { return .missing }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .invalid("the Authorization header must be `Bearer <token>`")
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard token.hasPrefix(Self.prefix), token.utf8.count <= 128 else { return .invalid("not a Splice token") }
        let hash = Self.hash(of: token)
        let now = ContinuousClock.now
        let cached = cache.withLock { cache -> TokenIdentity? in
            guard let entry = cache[hash], now - entry.at < Self.cacheAge else { return nil }
            return entry.identity
        }
        let identity: TokenIdentity
        if let cached {
            identity = cached
        } else {
            let record: APITokenRecord?
            do {
                record = try await repository.token(hash: hash)
            } catch {
                return .unavailable
            }
            guard let record, ConstantTime.equals(record.tokenHash.bytes, hash.bytes) else {
                return .invalid("the token is not known")
            }
            identity = TokenIdentity(record: record, inputRoots: PathRoots(resolved: record.inputRoots),
                                     outputRoots: PathRoots(resolved: record.outputRoots))
            cache.withLock { cache in
                if cache.count > 10_000 { cache.removeAll() }
                cache[hash] = (identity, now)
            }
        }
        guard identity.record.revokedAt == nil else { return .invalid("the token was revoked") }
        if let expiry = identity.record.expiresAt, expiry <= Date() { return .invalid("the token has expired") }
        return .valid(identity)
    }

    /// Forgets a token (revoked here): its next use asks the store.
    func forget(_ hash: SHA256Digest) {
        _ = cache.withLock { $0.removeValue(forKey: hash) }
    }

    /// `sha256:` + the hex SHA-256 of the token's text: what the store keeps.
    static func hash(of token: String) -> SHA256Digest {
        // 32 bytes always make a digest.
        SHA256Digest(bytes: SHA256.digest(of: Array(token.utf8)))!
    }

    /// A new token: the prefix and 32 random bytes from the system's CSPRNG (getrandom), base64url.
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let base64 = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return prefix + base64
    }
}

/// Per-token rate limits: a token bucket per token (its rate a second, bursts of twice that), so
/// one client cannot take the API from the others. `Retry-After` is the time until the next
/// request is admitted, in whole seconds.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    private let buckets = Mutex<[UUID: Bucket]>([:])
    private let defaultRate: Int

    init(defaultRate: Int) {
        self.defaultRate = defaultRate
    }

    /// Nil when `token` may make a request now (it is counted); else the seconds to wait.
    func admit(_ token: APITokenRecord) -> Int? {
        let rate = Double(token.rateLimit ?? defaultRate)
        let capacity = rate * 2
        let now = ContinuousClock.now
        return buckets.withLock { buckets -> Int? in
            var bucket = buckets[token.id] ?? Bucket(tokens: capacity, at: now)
            let elapsed = now - bucket.at
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(capacity, bucket.tokens + seconds * rate)
            bucket.at = now
            defer { buckets[token.id] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }
}
