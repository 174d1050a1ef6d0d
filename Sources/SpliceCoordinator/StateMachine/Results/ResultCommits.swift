import SpliceCore
import SpliceWire

/// The COMPLETE and FAIL reports the coordinator has received and not yet seen committed, by lease
/// token (a resend that comes meanwhile waits for the same commit), and the outcomes of those
/// recently committed (so a resend gets the same ACK at once).
struct ResultCommits: Sendable {
    /// One report of a result waiting for its commit (the first, or a resend that came meanwhile).
    struct Waiter: Sendable {
        var identity: WorkerIdentity
        var incarnation: UInt64
        var peer: WirePeer
        var acknowledged: Ack.Acknowledged
        /// Part of a HELLO: its WELCOME waits for this commit.
        var fromHello: Bool
    }

    private var pending: [LeaseToken: [Waiter]] = [:]
    private var answered: AnsweredResults

    init(answeredCapacity: Int) {
        answered = AnsweredResults(capacity: answeredCapacity)
    }

    /// The committed outcome of `token`, when it is still remembered.
    func outcome(of token: LeaseToken) -> ResultOutcome? { answered[token] }

    /// Whether a report of `token` waits for its commit.
    func isPending(_ token: LeaseToken) -> Bool { pending[token] != nil }

    /// Tokens whose commit is under way (the orphan sweep leaves them alone).
    var pendingTokens: Dictionary<LeaseToken, [Waiter]>.Keys { pending.keys }

    /// Queues a report; true when it is the first of its token (its commit must be started).
    mutating func wait(_ waiter: Waiter, for token: LeaseToken) -> Bool {
        if pending[token] != nil {
            pending[token]?.append(waiter)
            return false
        }
        pending[token] = [waiter]
        return true
    }

    /// The commit is done: remembers the outcome; the reports that waited for it, first one first.
    mutating func committed(_ token: LeaseToken, outcome: ResultOutcome) -> [Waiter] {
        answered.record(outcome, for: token)
        return pending.removeValue(forKey: token) ?? []
    }

    /// The commit failed: the reports that waited for it (the workers resend).
    mutating func failed(_ token: LeaseToken) -> [Waiter] {
        pending.removeValue(forKey: token) ?? []
    }
}
