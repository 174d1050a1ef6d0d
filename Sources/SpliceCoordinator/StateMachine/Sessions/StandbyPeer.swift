package import SpliceWire

/// A worker a coordinator has heard from, as its standby side remembers it: where to reach it and
/// whether it understands STANDBY and ACTIVE (its HELLO said `standbyAware`). A standby tells these
/// workers ACTIVE when it takes over, so they need not wait to notice that the old one is gone.
package struct StandbyPeer: Sendable, Hashable {
    package var identity: WorkerIdentity
    /// The return address of its latest message.
    package var peer: WirePeer
    package var standbyAware: Bool
    /// The worker-protocol version it speaks (STANDBY and ACTIVE go to it in that version).
    package var protocolVersion: Int

    package init(identity: WorkerIdentity, peer: WirePeer, standbyAware: Bool,
                 protocolVersion: Int = WorkerProtocol.version) {
        self.identity = identity
        self.peer = peer
        self.standbyAware = standbyAware
        self.protocolVersion = protocolVersion
    }
}
