import SpliceCore
import SpliceWire

/// The committed outcome of recent COMPLETE/FAIL reports, by lease token, so that a resend is
/// acknowledged at once and the same way every time. Sound because a token's outcome never
/// changes: a completed attempt stays completed, and a token that is no longer current never
/// becomes current again. Bounded: the oldest entries go first; a resend older than that is
/// simply answered by the store again (COMPLETE: `duplicate`/`stale`; FAIL: `stale`).
struct AnsweredResults: Sendable {
    private var outcomes: [LeaseToken: ResultOutcome] = [:]
    private var order: [LeaseToken] = []
    private var head = 0
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity > 0, "capacity must be positive")
        self.capacity = capacity
    }

    subscript(token: LeaseToken) -> ResultOutcome? { outcomes[token] }

    mutating func record(_ outcome: ResultOutcome, for token: LeaseToken) {
        guard outcomes.updateValue(outcome, forKey: token) == nil else { return }
        order.append(token)
        if order.count - head > capacity {
            outcomes[order[head]] = nil
            head += 1
        }
        if head > capacity {  // compact now and then instead of shifting on every insert
            order.removeFirst(head)
            head = 0
        }
    }

    var count: Int { outcomes.count }
}
