import Synchronization

/// Whether this coordinator is the one that acts for the cluster where only one may: the webhook
/// sender sends only while it is set. A coordinator alone is always active; a standby coordinator
/// (one that takes over when the active one dies) clears it until it leads.
public final class LeadershipGate: Sendable {
    private let active: Atomic<Bool>

    public init(active: Bool = true) {
        self.active = Atomic(active)
    }

    public var isActive: Bool { active.load(ordering: .acquiring) }

    public func set(active: Bool) { self.active.store(active, ordering: .releasing) }
}
